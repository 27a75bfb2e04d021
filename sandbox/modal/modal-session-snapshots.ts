import type { Logger } from 'pino';
import type { ModalSandboxLike } from './modal-client.ts';
import { EXPIRY_MARGIN_MS, type ModalContext, snapshotTtlMs } from './modal-context.ts';

/** A session's sandbox as the run that holds it snapshots it: where snapshots go, and when the last was taken. */
export type HeldSandbox = {
  readonly ctx: ModalContext;
  readonly sessionId: string;
  readonly epoch: number | undefined;
  readonly sandbox: ModalSandboxLike;
  readonly log: Logger;
  /** `Date.now()` at the last snapshot (at first, when the run took the sandbox). */
  lastSnapshotAt: number;
};

/** Snapshots the sandbox's filesystem and records it as the session's newest; undefined when that failed. */
export async function snapshotSession(held: HeldSandbox, why: string): Promise<string | undefined> {
  const { ctx, sessionId, epoch, sandbox, log } = held;
  const started = Date.now();
  try {
    const image = await sandbox.snapshotFilesystem({ ttlMs: snapshotTtlMs(ctx.settings) });
    held.lastSnapshotAt = Date.now();
    await ctx.store.save(sessionId, { imageId: image.imageId, snapshotAt: ctx.clock() }, epoch);
    log.info({ imageId: image.imageId, why, ms: Date.now() - started }, 'session sandbox snapshotted');
    return image.imageId;
  } catch (error) {
    log.warn({ err: error, why }, 'could not snapshot the session sandbox');
    return undefined;
  }
}

/** After a step: the sandbox was used now, and is snapshotted when its last snapshot is older than MODAL_SNAPSHOT_EVERY_MINUTES. */
export async function recordUse(held: HeldSandbox): Promise<void> {
  const { ctx, sessionId, epoch } = held;
  await ctx.store.save(sessionId, { usedAt: ctx.clock() }, epoch).catch(() => undefined);
  if (Date.now() - held.lastSnapshotAt >= ctx.settings.snapshotEveryMinutes * 60_000)
    await snapshotSession(held, 'periodic');
}

/** Modal ends the sandbox at its time limit whatever it is doing: save the work just before. */
export function scheduleExpirySnapshot(held: HeldSandbox, expiresAt: Date | null): NodeJS.Timeout | undefined {
  if (!expiresAt) return undefined;
  const timer = setTimeout(
    () => void snapshotSession(held, 'time limit near'),
    Math.max(0, expiresAt.getTime() - held.ctx.clock().getTime() - EXPIRY_MARGIN_MS),
  );
  timer.unref();
  return timer;
}

/**
 * The work is saved before the sandbox is left to its idle limit, so nothing depends on it staying
 * up: the snapshot is tried again after each of the retry delays, and the record says whether the
 * sandbox was released (saved) or still alone holds the latest work.
 */
export async function snapshotForRelease(held: HeldSandbox): Promise<void> {
  const { ctx, sessionId, epoch, sandbox, log } = held;
  let imageId = await snapshotSession(held, 'release');
  for (const delay of ctx.snapshotRetryDelaysMs) {
    if (imageId) break;
    await new Promise((resolve) => setTimeout(resolve, delay));
    imageId = await snapshotSession(held, 'release, again');
  }
  if (imageId) {
    await ctx.store.save(sessionId, { released: true, usedAt: ctx.clock() }, epoch);
    return;
  }
  // Not released: the sandbox alone holds the latest work, so the reaper leaves it, the next run
  // reattaches to it, and its release snapshots again.
  await ctx.store.save(sessionId, { released: false, usedAt: ctx.clock() }, epoch);
  log.warn(
    { sandboxId: sandbox.sandboxId },
    'the session sandbox could not be snapshotted; it stays unreleased and its next run snapshots it again',
  );
}
