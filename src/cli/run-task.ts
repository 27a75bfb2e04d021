import { createInterface } from 'node:readline/promises';
import type { Actor } from '../core/actor.ts';
import type { StoredEvent } from '../core/events.ts';
import { isTerminal, type SessionStatus } from '../core/session-status.ts';
import { configuredSecrets, type Config } from '../config.ts';
import { createLogger } from '../logger.ts';
import { startPatchbay, type Patchbay } from '../main.ts';
import type { ModelProvider } from '../models/model-provider.ts';
import { followSession } from './follow-session.ts';
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

/**
 * `patchbay run`: one session in this process (database, worker, sandbox), its events streamed to
 * the terminal with a live status line. Questions are asked at the prompt when there is one.
 * Exit codes: 0 completed, 1 failed, 3 waiting for an answer with no terminal to ask at, 130 stopped.
 */
export async function runTask(options: RunTaskOptions): Promise<number> {
  const out = options.out ?? process.stdout;
  const input = options.input ?? process.stdin;
  const log = createLogger(options.logLevel ?? process.env.LOG_LEVEL ?? 'warn', process.stderr, configuredSecrets(options.config));
  const app = await startPatchbay(options.config, { log, work: true, ...(options.model && { model: options.model }), ...(options.verifierModel && { verifierModel: options.verifierModel }) });
  try {
    const started = await app.service.start({
      thread: { source: 'cli' },
      actor: options.actor,
      text: options.task,
      repo: options.repo,
      ...(options.baseBranch && { baseBranch: options.baseBranch }),
    });
    if (started.kind !== 'started') throw new Error(`could not start a session (${started.kind})`);
    return await follow(app, started.session.id, options, out, input);
  } finally {
    await app.close();
  }
}

async function follow(app: Patchbay, sessionId: string, options: RunTaskOptions, out: NodeJS.WriteStream, input: NodeJS.ReadStream): Promise<number> {
  const status = createStatusLine(out);
  const stopper = new AbortController();
  let stops = 0;
  const onSigint = () => {
    stops += 1;
    if (stops > 1) process.exit(130);
    status.print('Stopping... (Ctrl-C again to quit at once)');
    void app.service.stop(sessionId, options.actor);
  };
  process.on('SIGINT', onSigint);
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
          await app.service.sendMessage(sessionId, options.actor, answer || question.recommended || 'Use your judgement.', question.questionId);
        }
      },
      until: (stored) => waitingWithoutPrompt || (stored.event.type === 'status-changed' && isTerminal(stored.event.to)),
    });
  } finally {
    process.off('SIGINT', onSigint);
    status.stop();
  }
  const session = await app.store.get(sessionId);
  if (waitingWithoutPrompt) {
    out.write(`\nThe agent is waiting for an answer and there is no terminal to ask at. Session ${sessionId} stays waiting.\n`);
    return 3;
  }
  if (final === 'completed') {
    const result = session?.result;
    out.write(`\nDone. ${result?.commit ? `Branch ${result.branch} at ${result.commit.slice(0, 12)}.` : 'No changes to commit.'}\n`);
    return 0;
  }
  if (final === 'cancelled') return 130;
  out.write(`\nFailed: ${session?.error ?? 'unknown reason'}\n`);
  return 1;
}
