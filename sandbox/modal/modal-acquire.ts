import type { Logger } from 'pino';
import type { Sandbox, SandboxSpec } from '../sandbox.ts';
import { assertSessionId } from '../workspace-store.ts';
import type { ModalImageLike, ModalSandboxLike } from './modal-client.ts';
import type { ModalContext } from './modal-context.ts';
import { baseImage, sessionSnapshot, templateImage } from './modal-images.ts';
import { findLiveSandbox } from './modal-live-sandbox.ts';
import type { ModalSessionRecord } from './modal-records.ts';
import { createSessionSandbox } from './modal-sandbox-create.ts';
import { openSessionSandbox } from './modal-session-sandbox.ts';

const LOST_AFTER_SNAPSHOT_NOTE = (at: string) =>
  `The sandbox this session worked in was lost before its work was saved. The workspace was restored from a snapshot taken at ${at}: changes made after that are not in it. Check the workspace (git status, git log) and redo what is missing before going on.`;
const LOST_BEFORE_SNAPSHOT_NOTE =
  'The sandbox this session worked in was lost before any of its work was saved. The workspace starts again from the branch as it was pushed (or its base): check it and redo what is missing.';

/** The session's sandbox and, when it was lost with unsaved work, the note that tells the model so. */
type Attached = { sandbox: ModalSandboxLike; restoredNote: string | undefined };

type AcquireStep = { sessionId: string; spec: SandboxSpec; log: Logger };

/**
 * The session's sandbox for one run: the live one reattached, else a new one from the session's
 * snapshot, else a new one from the repository's setup image or the base image. Under the run's
 * lease (SandboxSpec.epoch): a run that was taken over gets no sandbox (lease_lost).
 */
export async function acquireModalSandbox(ctx: ModalContext, sessionId: string, spec: SandboxSpec): Promise<Sandbox> {
  assertSessionId(sessionId);
  const log = ctx.log.child({ sessionId });
  if (spec.epoch !== undefined) await ctx.store.assertEpoch(sessionId, spec.epoch);
  const { sandbox, restoredNote } = await attachOrStart(ctx, { sessionId, spec, log });
  ctx.heldSessions.add(sessionId);
  return openSessionSandbox(ctx, {
    sessionId,
    sandbox,
    epoch: spec.epoch,
    expiresAt: (await ctx.store.get(sessionId))?.expiresAt ?? null,
    restoredNote,
    log,
  });
}

async function attachOrStart(ctx: ModalContext, step: AcquireStep): Promise<Attached> {
  const { sessionId, spec, log } = step;
  let record = await ctx.store.get(sessionId);
  const live = await findLiveSandbox(ctx, sessionId, record, spec.epoch);
  if (live) {
    await ctx.store.save(sessionId, { usedAt: ctx.clock() }, spec.epoch);
    log.info({ sandboxId: live.sandboxId }, 'reattached to the session sandbox');
    return { sandbox: live, restoredNote: undefined };
  }
  // An ended sandbox may have just left its exit snapshot in the record.
  if (record?.sandboxId) record = await ctx.store.get(sessionId);
  const snapshotImage = record?.imageId
    ? await sessionSnapshot(ctx, { sessionId, log, epoch: spec.epoch }, record.imageId)
    : undefined;
  if (record?.imageId && snapshotImage) return restoreFromSnapshot(ctx, step, record, snapshotImage);
  return startFresh(ctx, step, record);
}

async function restoreFromSnapshot(
  ctx: ModalContext,
  { sessionId, spec, log }: AcquireStep,
  record: ModalSessionRecord,
  image: ModalImageLike,
): Promise<Attached> {
  const sandbox = await createSessionSandbox(ctx, sessionId, spec, image);
  const restoredNote = record.released
    ? undefined
    : LOST_AFTER_SNAPSHOT_NOTE(record.snapshotAt?.toISOString() ?? 'an earlier point');
  log.info(
    { sandboxId: sandbox.sandboxId, imageId: record.imageId, lost: !record.released },
    'session sandbox restored from its snapshot',
  );
  return { sandbox, restoredNote };
}

async function startFresh(
  ctx: ModalContext,
  { sessionId, spec, log }: AcquireStep,
  record: ModalSessionRecord | undefined,
): Promise<Attached> {
  const lost = Boolean(record?.sandboxId || (record && !record.released));
  const template = spec.repo ? await templateImage(ctx, spec.repo, log) : undefined;
  const sandbox = await createSessionSandbox(ctx, sessionId, spec, template ?? (await baseImage(ctx)));
  log.info({ sandboxId: sandbox.sandboxId, template: template?.imageId }, 'session sandbox created');
  return { sandbox, restoredNote: lost ? LOST_BEFORE_SNAPSHOT_NOTE : undefined };
}
