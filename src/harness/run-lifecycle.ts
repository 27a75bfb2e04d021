import type { Logger } from 'pino';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { describeError, isPatchbayError, type ErrorCode } from '../core/errors.ts';
import type { RunLog } from '../core/run-log.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { prepareSpareCheckout } from '../git/prepare-workspace.ts';
import { stopProcessHost } from '../agent/sandbox-host/process-host.ts';
import type { HarnessDeps } from './run-session.ts';

/**
 * Moves a queued (or interrupted) session to running; undefined when there is nothing to run. The
 * record returned is the one read before the transition.
 */
export async function startRun(sessionId: string, store: RunLog, log: Logger): Promise<SessionRecord | undefined> {
  const session = await store.get(sessionId);
  if (!session) {
    log.warn('run requested for a session that does not exist');
    return undefined;
  }
  if (session.status !== 'queued' && session.status !== 'running') {
    log.info({ status: session.status }, 'nothing to run');
    return undefined;
  }
  // 'running' with no live run means the last one was interrupted: its worker crashed or shut down.
  const interrupted = session.status === 'running';
  const resumed =
    'the previous run was interrupted (its server stopped or crashed); resuming from the last recorded step';
  const started = await store.transition(
    sessionId,
    'start',
    interrupted ? { events: [{ event: { type: 'run-resumed', reason: resumed } }] } : {},
  );
  if (!started.applied) {
    // Stopped between the read above and the transition.
    log.info({ status: started.session.status }, 'nothing to run');
    return undefined;
  }
  if (interrupted) log.info('run was interrupted and is resumed');
  return session;
}

/** Error codes that say what a request got wrong, not that Patchbay broke. */
const userMistakes: ReadonlySet<ErrorCode> = new Set([
  'config_invalid',
  'invalid_input',
  'not_found',
  'unauthorized',
  'conflict',
  'git_failed',
  'path_refused',
  'command_refused',
  'model_auth',
  'model_not_found',
]);

/**
 * A run that threw: the session fails with the reason, unless the run was aborted (then it is
 * left for the queue) or taken over by another run (rethrown: that run owns the session; say nothing).
 */
export async function failRun(
  sessionId: string,
  error: unknown,
  store: RunLog,
  signal: AbortSignal,
  log: Logger,
): Promise<void> {
  if (signal.aborted) {
    await noteAbort(sessionId, store, log);
    return;
  }
  if (isPatchbayError(error, 'lease_lost')) throw error;
  const code = isPatchbayError(error) ? error.code : 'internal';
  // A request Patchbay cannot carry out (a repository that does not exist, a refused path) is
  // told to its thread in words people act on, and the run's end line says it failed (logRunEnd);
  // what git or the service said underneath goes to the log only. Anything else is a fault here.
  const cause = error instanceof Error && error.cause !== undefined ? describeError(error.cause) : undefined;
  if (!userMistakes.has(code)) log.error({ err: error }, 'session run failed');
  else if (cause) log.warn({ code, cause }, 'what the failed step said');
  await store.transition(sessionId, 'fail', {
    reason: describeError(error),
    patch: { error: describeError(error) },
    events: [{ event: { type: 'error', code, message: describeError(error) } }],
  });
}

/**
 * After every run, however it ended: the sandbox is released, and the next session on this
 * repository and base starts from a checkout made now, not at its start.
 */
export async function endRun(
  session: SessionRecord,
  sandbox: Sandbox | undefined,
  deps: HarnessDeps,
  signal: AbortSignal,
  log: Logger,
): Promise<void> {
  // Background processes and the browser end with the run; a later run starts them again if asked.
  if (sandbox) await stopProcessHost(sandbox);
  await sandbox?.release().catch((error: unknown) => log.warn({ err: error }, 'sandbox release failed'));
  const after = await deps.store.get(session.id).catch(() => undefined);
  if (after) logRunEnd(after, log);
  const baseBranch = after?.baseBranch;
  if (deps.sandboxes.sharesObjects && baseBranch && !signal.aborted) {
    await prepareSpareCheckout({ repo: session.repo, baseBranch, dataDir: deps.dataDir, log });
  }
}

/**
 * A run ends 'cancelled' only because someone stopped the session, and the stop wrote that status
 * before the run was aborted. Aborted with any other status, the worker is shutting down or lost
 * its job to another worker: the status stays as it is (a message after a stop may have queued the
 * session again), and the queue's retry resumes the run from the database.
 */
export async function noteAbort(sessionId: string, store: RunLog, log: Logger): Promise<void> {
  const status = (await store.get(sessionId))?.status;
  // Info, not a warning: a shutdown interrupts runs on purpose, and the queue resumes them.
  if (status !== 'cancelled')
    log.info({ status }, 'run interrupted without a stop; leaving the session for the queue to resume');
}

/**
 * The one info line a run's end gets in the server's log when the session completed, failed or
 * waits for a person (an interrupted or stopped run says so elsewhere).
 */
export function logRunEnd(session: SessionRecord, log: Logger): void {
  const { status, result, pendingQuestion } = session;
  if (status === 'completed') {
    const outcome = result?.answered
      ? { answered: true }
      : { ...(result?.prUrl && { prUrl: result.prUrl }), ...(result?.commit && { branch: result.branch }) };
    log.info({ repo: session.repo, ...outcome }, 'session completed');
  } else if (status === 'failed') {
    log.info({ repo: session.repo, reason: session.error }, 'session failed');
  } else if (status === 'waiting' && pendingQuestion) {
    const waitsFor = pendingQuestion.approval ? 'an approval' : 'an answer';
    const question = pendingQuestion.question.split('\n')[0]?.slice(0, 200);
    log.info({ repo: session.repo, waitsFor, question }, 'session waiting for a person');
  } else if (status === 'waiting') {
    log.info({ repo: session.repo }, 'session waiting for its sub-tasks');
  }
}
