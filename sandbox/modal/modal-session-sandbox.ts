import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import { assertCommandEnv, type ExecOptions, type ExecResult, type Sandbox } from '../sandbox.ts';
import type { ModalSandboxLike } from './modal-client.ts';
import { MODAL_WORKDIR, type ModalContext } from './modal-context.ts';
import { SandboxEndWatch } from './modal-end-watch.ts';
import { type ModalExecOutput, toExecResult } from './modal-exec.ts';
import { createModalFiles, type ModalFiles, type RunInSandbox } from './modal-files.ts';
import { argvExec, shellExec } from './modal-sandbox-commands.ts';
import {
  type HeldSandbox,
  recordUse,
  scheduleExpirySnapshot,
  snapshotForRelease,
  snapshotSession,
} from './modal-session-snapshots.ts';

/** The session's sandbox as acquire found or made it, for one run to hold. */
export type OpenedSandbox = {
  sessionId: string;
  sandbox: ModalSandboxLike;
  epoch: number | undefined;
  /** When Modal ends the sandbox at its time limit (a snapshot is taken just before). */
  expiresAt: Date | null;
  restoredNote: string | undefined;
  log: Logger;
};

/** One run's hold on its session's sandbox: what it saved, whether the sandbox ended, and whether the run let go. */
type SessionHold = {
  readonly held: HeldSandbox;
  readonly watch: SandboxEndWatch;
  readonly expiryTimer: NodeJS.Timeout | undefined;
  state: 'open' | 'released' | 'destroyed';
};

/**
 * The Sandbox a run works in on Modal: commands and files go through the end watch, each step is
 * recorded as use (and snapshotted when due), and release saves the work before letting go.
 */
export function openSessionSandbox(ctx: ModalContext, opened: OpenedSandbox): Sandbox {
  const { sessionId, sandbox, epoch, log, restoredNote } = opened;
  const held: HeldSandbox = { ctx, sessionId, epoch, sandbox, log, lastSnapshotAt: Date.now() };
  const hold: SessionHold = {
    held,
    watch: new SandboxEndWatch(sandbox, { intervalMs: ctx.watchIntervalMs, log }),
    expiryTimer: scheduleExpirySnapshot(held, opened.expiresAt),
    state: 'open',
  };
  const files = createModalFiles((args, opts) => runInSession(hold, args, opts), MODAL_WORKDIR);
  return {
    sessionId,
    workdir: MODAL_WORKDIR,
    ...(restoredNote && { restoredNote }),
    exec: (command, opts = {}) => execInSession(hold, files, command, opts),
    readFile: (path) => files.readFile(path),
    async writeFile(path, content) {
      await files.writeFile(path, content);
      await recordUse(held);
    },
    listFiles: (path, listOptions) => files.listFiles(path, listOptions),
    putBytes: (path, data) => files.putBytes(path, data),
    getBytes: (path, maxBytes) => files.getBytes(path, maxBytes),
    failure: () => hold.watch.failure(),
    checkpoint: (checkpointOptions) => checkpointSession(hold, checkpointOptions),
    release: () => releaseSession(hold),
    destroy: () => destroySession(hold),
  };
}

function assertUsable(hold: SessionHold): void {
  const ended = hold.watch.failure();
  if (ended) throw ended;
  if (hold.state !== 'open')
    throw new PatchbayError('sandbox_failed', `sandbox for session ${hold.held.sessionId} was ${hold.state}`);
}

/** A file operation's command, in the workspace, while the run still holds a live sandbox. */
async function runInSession(
  hold: SessionHold,
  args: string[],
  opts: Parameters<RunInSandbox>[1],
): Promise<ModalExecOutput> {
  assertUsable(hold);
  const output = await hold.watch.during((sandboxEnded) =>
    argvExec(hold.held.sandbox, args, opts, { workdir: MODAL_WORKDIR, sandboxEnded }),
  );
  assertUsable(hold);
  return output;
}

/** The model's command, in `opts.cwd` under the workspace; the step counts as use unless the sandbox ended. */
async function execInSession(
  hold: SessionHold,
  files: ModalFiles,
  command: string,
  opts: ExecOptions,
): Promise<ExecResult> {
  assertUsable(hold);
  assertCommandEnv(opts.env);
  const cwd = opts.cwd && opts.cwd !== '.' ? await files.resolveDir(opts.cwd) : MODAL_WORKDIR;
  try {
    const output = await hold.watch.during((sandboxEnded) =>
      shellExec(hold.held.sandbox, command, opts, { workdir: cwd, sandboxEnded }),
    );
    assertUsable(hold);
    return toExecResult(output);
  } finally {
    if (!hold.watch.failure()) await recordUse(hold.held);
  }
}

/** Saves the filesystem now; with `template`, it also becomes the repository's setup image. */
async function checkpointSession(
  hold: SessionHold,
  options: { template?: { repo: string; commit: string } } | undefined,
): Promise<void> {
  assertUsable(hold);
  const imageId = await snapshotSession(hold.held, options?.template ? 'setup' : 'checkpoint');
  if (imageId && options?.template) {
    await hold.held.ctx.store.saveTemplate(options.template.repo, { imageId, baseCommit: options.template.commit });
  }
}

/** Lets go of the sandbox (saved first, unless it ended), leaving it to its idle limit and the reaper. */
async function releaseSession(hold: SessionHold): Promise<void> {
  if (hold.state !== 'open') return;
  hold.state = 'released';
  stopHolding(hold);
  if (!hold.watch.failure()) await snapshotForRelease(hold.held);
  hold.held.sandbox.detach();
  hold.held.log.debug('sandbox released');
}

/** Ends the sandbox and forgets the session's sandbox and snapshot. */
async function destroySession(hold: SessionHold): Promise<void> {
  if (hold.state === 'destroyed') return;
  hold.state = 'destroyed';
  stopHolding(hold);
  const { ctx, sessionId, epoch, sandbox, log } = hold.held;
  await sandbox
    .terminate()
    .catch((error: unknown) => log.warn({ err: error }, 'could not terminate the Modal sandbox'));
  await ctx.store.save(sessionId, { sandboxId: null, imageId: null, snapshotAt: null, released: true }, epoch);
  sandbox.detach();
}

function stopHolding(hold: SessionHold): void {
  hold.watch.stop();
  clearTimeout(hold.expiryTimer);
  hold.held.ctx.heldSessions.delete(hold.held.sessionId);
}
