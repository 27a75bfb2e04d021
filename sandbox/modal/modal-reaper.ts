import { sandboxSession } from '../../src/core/checks-sandbox.ts';
import type { ModalSandboxLike } from './modal-client.ts';
import { KIND_TAG, type ModalContext, SESSION_TAG } from './modal-context.ts';
import type { ModalSessionRecord } from './modal-records.ts';

/** A record in the use window of a sandbox being created right now (on any worker) is not an orphan's. */
const ORPHAN_GRACE_MS = 5 * 60_000;

/**
 * Terminates Patchbay's sandboxes in the app that no run needs: orphans (no session record names
 * them) and idle ones (used longer than `ttlMinutes` ago, held by no run here, and released, or a
 * checks sandbox). Returns the
 * sessions whose sandbox it ended.
 */
export async function reapModalSandboxes(ctx: ModalContext, now: Date): Promise<string[]> {
  const removed: string[] = [];
  const tracked = await ctx.store.bySandbox();
  const { appId } = await ctx.app();
  for await (const sandbox of ctx.client.sandboxes.list({ appId, tags: KIND_TAG })) {
    const record = tracked.get(sandbox.sandboxId);
    const verdict = record ? idleVerdict(ctx, record, now) : await orphanVerdict(ctx, sandbox, now);
    if (!verdict) continue;
    try {
      await sandbox.terminate();
      if (record) await ctx.store.save(verdict.sessionId, { sandboxId: null });
      removed.push(verdict.sessionId);
      ctx.log.info(
        { sessionId: verdict.sessionId, sandboxId: sandbox.sandboxId, reason: verdict.reason },
        'terminated a Modal sandbox',
      );
    } catch (error) {
      ctx.log.warn({ err: error, sandboxId: sandbox.sandboxId }, 'could not terminate a Modal sandbox');
    }
  }
  return removed;
}

type Verdict = { sessionId: string; reason: 'orphaned' | 'idle' };

function idleVerdict(
  ctx: ModalContext,
  record: { sessionId: string } & ModalSessionRecord,
  now: Date,
): Verdict | undefined {
  // A checks sandbox holds no work of the session (each round starts from a fresh checkout), so one a
  // dead worker left unreleased goes once idle too; an agent's unreleased sandbox alone holds its work.
  const checks = sandboxSession(record.sessionId) !== record.sessionId;
  const idle =
    (record.released || checks) &&
    !ctx.heldSessions.has(record.sessionId) &&
    now.getTime() - record.usedAt.getTime() > ctx.ttlMinutes * 60_000;
  return idle ? { sessionId: record.sessionId, reason: 'idle' } : undefined;
}

/** A sandbox no record names, by its session tag: left behind when its session's record moved on (or never existed). */
async function orphanVerdict(ctx: ModalContext, sandbox: ModalSandboxLike, now: Date): Promise<Verdict | undefined> {
  const tags = await sandbox.getTags().catch(() => ({}) as Record<string, string>);
  const sessionId = tags[SESSION_TAG];
  if (!sessionId) return undefined; // not one of ours
  const current = await ctx.store.get(sessionId);
  if (!current || now.getTime() - current.usedAt.getTime() > ORPHAN_GRACE_MS) return { sessionId, reason: 'orphaned' };
  return undefined;
}
