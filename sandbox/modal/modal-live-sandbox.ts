import type { ModalSandboxLike } from './modal-client.ts';
import { EXPIRY_MARGIN_MS, type ModalContext, snapshotTtlMs } from './modal-context.ts';
import { modalError } from './modal-errors.ts';
import { fenceModalSandbox } from './fenced-modal-sandbox.ts';
import type { ModalSessionRecord } from './modal-records.ts';

/** The session's live sandbox, or undefined when it has ended (or is about to reach its limit). */
export async function findLiveSandbox(
  ctx: ModalContext,
  sessionId: string,
  record: ModalSessionRecord | undefined,
  epoch: number | undefined,
): Promise<ModalSandboxLike | undefined> {
  if (!record?.sandboxId) return undefined;
  const sandbox = fenceModalSandbox(await ctx.client.sandboxes.fromId(record.sandboxId), {
    store: ctx.store,
    sessionId,
    epoch,
  });
  let exit: number | null;
  try {
    exit = await sandbox.poll();
  } catch (error) {
    if ((error as { code?: number }).code === 5 || (error as Error).name === 'NotFoundError') return undefined;
    throw modalError(error, `checking sandbox ${record.sandboxId}`);
  }
  if (exit !== null) {
    await takeExitSnapshot(ctx, sessionId, sandbox, epoch);
    return undefined;
  }
  if (record.expiresAt && record.expiresAt.getTime() - ctx.clock().getTime() < runMargin(ctx)) {
    return replaceNearLimit(ctx, { sessionId, sandbox, expiresAt: record.expiresAt, epoch });
  }
  return sandbox;
}

/** The time a reattached sandbox must have left: a run must fit in it, or Modal ends the sandbox under it. */
function runMargin(ctx: ModalContext): number {
  return Math.max(EXPIRY_MARGIN_MS, (ctx.settings.timeoutMinutes * 60_000) / 4, ctx.runMaxMs + EXPIRY_MARGIN_MS);
}

/**
 * A sandbox too close to Modal's limit for a run is saved and ended, so the session moves on to a
 * fresh one from the snapshot (undefined); one that cannot be snapshotted is used once more instead,
 * since ending it would lose whatever only it holds.
 */
async function replaceNearLimit(
  ctx: ModalContext,
  near: { sessionId: string; sandbox: ModalSandboxLike; expiresAt: Date; epoch: number | undefined },
): Promise<ModalSandboxLike | undefined> {
  const { sessionId, sandbox, expiresAt, epoch } = near;
  let image: { imageId: string };
  try {
    image = await sandbox.snapshotFilesystem({ ttlMs: snapshotTtlMs(ctx.settings) });
  } catch (error) {
    ctx.log.warn(
      { sessionId, sandboxId: sandbox.sandboxId, err: error },
      'could not snapshot a sandbox near its time limit; reattaching to it instead of replacing it',
    );
    return sandbox;
  }
  await ctx.store.save(sessionId, { imageId: image.imageId, snapshotAt: ctx.clock(), released: true }, epoch);
  await sandbox.terminate().catch(() => undefined);
  await ctx.store.save(sessionId, { sandboxId: null }, epoch);
  ctx.log.info(
    {
      sessionId,
      sandboxId: sandbox.sandboxId,
      leftMs: expiresAt.getTime() - ctx.clock().getTime(),
      neededMs: runMargin(ctx),
    },
    'the session sandbox has too little time left for a run; continuing in a new one from its snapshot',
  );
  return undefined;
}

/**
 * A sandbox that ended (time or idle limit, a lost container, terminated) leaves an exit snapshot
 * of its filesystem at that moment when it was created with them on: the session continues from
 * it with nothing lost. When Modal could not make one, the last snapshot of our own stands.
 */
async function takeExitSnapshot(
  ctx: ModalContext,
  sessionId: string,
  sandbox: ModalSandboxLike,
  epoch: number | undefined,
): Promise<void> {
  if (ctx.settings.exitSnapshots) {
    try {
      const image = await sandbox.experimentalGetExitSnapshot({ timeoutMs: 60_000 });
      await ctx.store.save(
        sessionId,
        { sandboxId: null, imageId: image.imageId, snapshotAt: ctx.clock(), released: true },
        epoch,
      );
      ctx.log.info(
        { sessionId, sandboxId: sandbox.sandboxId, imageId: image.imageId },
        'took the exit snapshot of an ended sandbox',
      );
      return;
    } catch (error) {
      ctx.log.warn(
        { sessionId, sandboxId: sandbox.sandboxId, err: error },
        'no exit snapshot of the ended sandbox; continuing from the last snapshot',
      );
    }
  }
  await ctx.store.save(sessionId, { sandboxId: null }, epoch);
}
