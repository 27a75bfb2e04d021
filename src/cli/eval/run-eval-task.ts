import { join } from 'node:path';
import type { Actor } from '../../core/actor.ts';
import { isTerminal, type SessionStatus } from '../../core/session-status.ts';
import type { PendingQuestion } from '../../core/session-record.ts';
import { harnessQuestionCall } from '../../harness/gates/harness-messages.ts';
import type { Patchbay } from '../../main.ts';
import { followSession } from '../follow-session.ts';
import { makeTaskRemote } from './eval-repo.ts';
import { taskOutcome, type TaskOutcome } from './eval-outcome.ts';
import type { EvalTask } from './eval-suite.ts';
import { runHiddenTests } from './hidden-tests.ts';

/** Questions answered per task; a model that keeps asking after that is stopped (and the task counts as failed). */
const maxAnswers = 3;

const fallbackAnswer = 'There is nobody to ask in this evaluation: use your judgement and finish the task.';

/**
 * One task through the real harness of `app`: a fresh local remote from its `repo/`, a session
 * started from the command line's thread, questions answered from the task's `answer`, then the
 * hidden tests on the pushed commit. `root` is a scratch directory the caller removes.
 */
export async function runEvalTask(options: {
  app: Patchbay;
  task: EvalTask;
  root: string;
  actor: Actor;
  signal?: AbortSignal;
}): Promise<TaskOutcome> {
  const { app, task, actor } = options;
  if (!app.sandboxes) throw new Error('patchbay eval needs a Patchbay that takes runs (work: true)');
  const remote = await makeTaskRemote(options.root, task.name, join(task.dir, 'repo'));
  const startedAt = performance.now();
  const started = await app.service.start({ thread: { source: 'cli' }, actor, text: task.request, repo: remote });
  if (started.kind !== 'started')
    throw new Error(`could not start a session for eval task ${task.name} (${started.kind})`);
  const sessionId = started.session.id;
  const { status, agentQuestionIds } = await followToEnd(app, sessionId, task, actor, options.signal);
  const wallMs = performance.now() - startedAt;
  const session = await app.store.get(sessionId);
  const events = await app.store.events(sessionId);
  const commit = [...events].reverse().find((e) => e.event.type === 'branch-pushed')?.event;
  const hidden = await runHiddenTests({
    sandboxes: app.sandboxes,
    sessionId,
    remote,
    commit: commit?.type === 'branch-pushed' ? commit.commit : undefined,
    task,
    ...(options.signal && { signal: options.signal }),
  });
  return taskOutcome({ task, status, error: session?.error ?? null, events, agentQuestionIds, hidden, wallMs });
}

/** Follows the session to its end, answering its questions; the status it ended in, and which questions were the agent's. */
async function followToEnd(
  app: Patchbay,
  sessionId: string,
  task: EvalTask,
  actor: Actor,
  signal: AbortSignal | undefined,
): Promise<{ status: SessionStatus; agentQuestionIds: Set<string> }> {
  let final: SessionStatus = 'failed';
  let answers = 0;
  const agentQuestionIds = new Set<string>();
  let budgetReached = false;
  const onAbort = () => void app.service.stop(sessionId, actor);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await followSession({
      sessionId,
      store: app.store,
      bus: app.bus,
      onEvent: async ({ event }) => {
        if (event.type === 'budget-reached') budgetReached = true;
        if (event.type !== 'status-changed') return;
        if (isTerminal(event.to)) final = event.to;
        if (event.to !== 'waiting') return;
        const question = (await app.store.get(sessionId))?.pendingQuestion;
        if (!question) return;
        if (question.toolCallId !== harnessQuestionCall) agentQuestionIds.add(question.questionId);
        answers += 1;
        if (answers > maxAnswers) {
          await app.service.stop(sessionId, actor);
          return;
        }
        await app.service.sendMessage(sessionId, actor, answerTo(question, task, budgetReached), question.questionId);
        budgetReached = false;
      },
      until: ({ event }) => event.type === 'status-changed' && isTerminal(event.to),
    });
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  return { status: final, agentQuestionIds };
}

/**
 * The agent's question gets the task's `answer`. The harness's own get what an evaluation wants:
 * a spent budget stops the task (the budget is part of what is measured), and a change the gates
 * did not pass is kept as a draft (the recommended choice), so the figures show it as not ready.
 */
function answerTo(question: PendingQuestion, task: EvalTask, budgetReached: boolean): string {
  if (question.toolCallId !== harnessQuestionCall) return task.answer ?? question.recommended ?? fallbackAnswer;
  if (budgetReached) return 'Stop';
  return question.recommended ?? fallbackAnswer;
}
