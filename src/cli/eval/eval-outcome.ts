import type { StoredEvent } from '../../core/events.ts';
import { blockingReasons } from '../../core/evidence.ts';
import type { SessionStatus } from '../../core/session-status.ts';
import { addUsage, estimateCostUsd } from '../../models/model-catalog.ts';
import { zeroUsage, type Usage } from '../../models/model-provider.ts';
import type { EvalTask, EvalTaskClass } from './eval-suite.ts';
import type { HiddenTestResult } from './hidden-tests.ts';

/** What became of one task: what Patchbay decided, and what the hidden tests say about it. */
export type TaskOutcome = {
  task: string;
  class: EvalTaskClass;
  status: SessionStatus;
  /** The commit the session pushed last, if any. */
  commit: string | null;
  /** The verifier passed the pushed commit. */
  verified: boolean;
  /**
   * The gate passed the pushed commit: every check ran and passed and the verdict passed, so its
   * pull request is marked ready (the eval's local remote has no pull request to mark; the gate's
   * decision is what counts).
   */
  ready: boolean;
  hidden: HiddenTestResult;
  /** Made ready although a hidden test fails: the figure a team most needs to be low. */
  readyWithHiddenFailing: boolean;
  /** Questions the agent asked (ask_user); the harness's own (a draft to keep, a budget spent) are not counted. */
  questions: number;
  /** The harness's questions: checks or the verifier still failing, a budget reached. */
  harnessQuestions: number;
  /** What the agent and the harness were told in reply, in order. */
  answers: string[];
  usage: Usage;
  /** List price of every model call (agent and verifier); null when a model's price is unknown. */
  costUsd: number | null;
  wallMs: number;
  error: string | null;
};

/**
 * Reads one finished session's log into the task's figures. Pure. `agentQuestionIds`: the questions
 * that came from the agent's ask_user (the log's question events do not say who asked).
 */
export function taskOutcome(input: {
  task: EvalTask;
  status: SessionStatus;
  error: string | null;
  events: readonly StoredEvent[];
  agentQuestionIds: ReadonlySet<string>;
  hidden: HiddenTestResult;
  wallMs: number;
}): TaskOutcome {
  const { events, hidden } = input;
  let commit: string | null = null;
  let verifiedCommit: string | null = null;
  let readyCommit: string | null = null;
  let questions = 0;
  let harnessQuestions = 0;
  const answers: string[] = [];
  let usage: Usage = { ...zeroUsage };
  let costUsd: number | null = 0;
  for (const { event } of events) {
    switch (event.type) {
      case 'branch-pushed':
        commit = event.commit;
        break;
      case 'verification-finished':
        verifiedCommit = event.outcome === 'passed' ? event.commit : null;
        break;
      case 'review-gate':
        readyCommit = blockingReasons(event).length === 0 ? event.commit : null;
        break;
      case 'question-asked':
        if (input.agentQuestionIds.has(event.questionId)) questions += 1;
        else harnessQuestions += 1;
        break;
      case 'question-answered':
        answers.push(event.text);
        break;
      case 'usage': {
        usage = addUsage(usage, event);
        const cost = estimateCostUsd(event.model, event);
        costUsd = costUsd === null || cost === undefined ? null : costUsd + cost;
        break;
      }
      default:
        break;
    }
  }
  const ready = commit !== null && readyCommit === commit;
  return {
    task: input.task.name,
    class: input.task.class,
    status: input.status,
    commit,
    verified: commit !== null && verifiedCommit === commit,
    ready,
    hidden,
    readyWithHiddenFailing: ready && hidden.outcome !== 'passed',
    questions,
    harnessQuestions,
    answers,
    usage,
    costUsd,
    wallMs: Math.round(input.wallMs),
    error: input.error,
  };
}

/** One model's row: counts over its tasks. */
export type ModelTotals = {
  tasks: number;
  verified: number;
  ready: number;
  hiddenPassed: number;
  readyWithHiddenFailing: number;
  questions: number;
  tokens: number;
  costUsd: number | null;
  wallMs: number;
};

export function modelTotals(outcomes: readonly TaskOutcome[]): ModelTotals {
  const count = (pick: (o: TaskOutcome) => boolean) => outcomes.filter(pick).length;
  return {
    tasks: outcomes.length,
    verified: count((o) => o.verified),
    ready: count((o) => o.ready),
    hiddenPassed: count((o) => o.hidden.outcome === 'passed'),
    readyWithHiddenFailing: count((o) => o.readyWithHiddenFailing),
    questions: outcomes.reduce((sum, o) => sum + o.questions, 0),
    tokens: outcomes.reduce((sum, o) => sum + totalTokens(o.usage), 0),
    costUsd: outcomes.some((o) => o.costUsd === null) ? null : outcomes.reduce((sum, o) => sum + (o.costUsd ?? 0), 0),
    wallMs: outcomes.reduce((sum, o) => sum + o.wallMs, 0),
  };
}

export function totalTokens(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens;
}
