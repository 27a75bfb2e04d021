import type { Logger } from 'pino';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { ArtifactStore } from '../core/artifact-store.ts';
import { describeError } from '../core/errors.ts';
import type { PictureFitter } from '../core/image-format.ts';
import { attachedImages } from './message-images.ts';
import type { ModelProvider, ToolCall, ToolSpec } from '../models/model-provider.ts';
import type { RunLog } from '../core/run-log.ts';
import type { PendingQuestion } from '../core/session-record.ts';
import { compactTranscript, endTextOnlyTurn } from './model-turn.ts';
import { takeTurnWithinWindow } from './turn-within-window.ts';
import { isStopped, openRunState, recordStep, type RunState, unreadUserMessages } from './run-state.ts';
import type { ToolContext, ToolOutput } from './tool.ts';
import type { SubtaskSpawner } from './subtask-calls.ts';
import { executeToolCalls, resumeUnresolvedCalls } from './tool-calls.ts';
import { quoteMessage, taskMessage } from './transcript-text.ts';

/** The part of the run log the runner reads and writes: every step lands there before the next starts. */
export type RunnerLog = Pick<RunLog, 'get' | 'transcript' | 'events' | 'commitStep' | 'replaceTranscript'>;

export type ToolExecutor = {
  specs(): ToolSpec[];
  /** Must not throw: failures come back as error results. */
  execute(call: ToolCall, ctx: ToolContext): Promise<ToolOutput>;
  /**
   * Whether a call that an earlier run started (its tool-start is in the log) and left without a
   * result may run again: it changes nothing, or the workspace was put back to where it was before
   * the call. When false, the call is reported to the model as interrupted instead, never applied
   * twice. Absent: such calls run again.
   */
  rerunsInterrupted?(call: ToolCall): boolean;
};

/** Safety limits for one run. They stop a runaway run; they are not how a run normally ends. */
export type RunLimits = {
  maxWallMs: number;
  maxTokens: number;
  maxToolCalls: number;
  maxOutputTokens: number;
  maxRepeatedFailures: number;
  /**
   * Tool output longer than this is cut (head and tail kept, with a note saying what was cut and
   * how to see more) before it joins the transcript. The tool registry has its own, higher cap
   * (about 32k); keep this one below it so this is the limit that applies.
   */
  maxToolOutputChars: number;
  /** Compact older turns into a summary once the transcript uses this share of the model's window. */
  compactAt: number;
  /** US dollars this run may spend at list prices (models without a known price count as free). */
  maxCostUsd: number;
  /** How long a held command waits for a person's decision before it counts as denied (APPROVAL_TIMEOUT_MINUTES). */
  approvalTimeoutMs: number;
};

export const defaultRunLimits: RunLimits = {
  maxWallMs: 60 * 60_000,
  maxTokens: 5_000_000,
  maxToolCalls: 500,
  maxOutputTokens: 16_000,
  maxRepeatedFailures: 3,
  maxToolOutputChars: 30_000,
  compactAt: 0.75,
  maxCostUsd: Number.POSITIVE_INFINITY,
  approvalTimeoutMs: 60 * 60_000,
};

export type RunOutcome =
  | { kind: 'finished'; summary: string }
  | { kind: 'waiting'; question: PendingQuestion }
  /** The spawn_subtasks call `callId` created child sessions: the session waits until they have all ended. */
  | { kind: 'subtasks'; callId: string }
  | { kind: 'cancelled' }
  | {
      kind: 'failed';
      code: string;
      message: string;
      budget?: { kind: 'cost' | 'time'; spent: number; limit: number };
      /** The model service failed in a way that passes, and kept failing through every retry: the run pauses, it does not fail. */
      modelDown?: boolean;
    };

export type RunInput = {
  sessionId: string;
  system: string;
  model: ModelProvider;
  tools: ToolExecutor;
  sandbox: Sandbox;
  /** The sink the runner writes each step to (the session store in production). */
  runLog: RunnerLog;
  signal: AbortSignal;
  log: Logger;
  limits?: Partial<RunLimits>;
  now?: () => number;
  /** Where the pictures attached to people's messages are read from; without it they are left out. */
  artifacts?: Pick<ArtifactStore, 'get'> | undefined;
  /** Scales a stored picture that breaks a request's size rules before it is sent; without it, such a picture is dropped with a note. */
  pictures?: PictureFitter | undefined;
  /** Set when people can approve risky commands in this session: the rules layered over the defaults. */
  approvals?: ToolContext['approvals'];
  /** Starts spawn_subtasks calls' children (the harness); absent in a sub-task's own run, which cannot fan out. */
  subtasks?: SubtaskSpawner | undefined;
  /** The model's text as it streams, with the turn it belongs to. Must not throw. */
  onDelta?: (text: string, turn: number) => void;
};

/**
 * The agent loop: model turn, then its tool calls (several per turn), results back, next turn.
 * Every step is written to the session's transcript and event log before the next one starts, so
 * a run killed at any point resumes from the database: calls without results are executed again
 * (or reported as interrupted when the tools cannot vouch for the workspace, see
 * ToolExecutor.rerunsInterrupted), and events carry dedupe keys so a replayed step writes no second copy.
 *
 * Stops on conditions: the model ends its turn, asks a question (waiting), the session is stopped,
 * a safety limit is reached, the loop guard sees the same failure repeating, or the model fails.
 */
export async function runAgent(input: RunInput): Promise<RunOutcome> {
  const run = await openRunState(input, { ...defaultRunLimits, ...input.limits });
  try {
    const resumed = await resumeUnresolvedCalls(run);
    if (resumed) return resumed;
    for (let turn = run.firstTurn; ; turn++) {
      const outcome = await runTurn(run, turn);
      if (outcome) return outcome;
    }
  } catch (error) {
    if (input.signal.aborted) return { kind: 'cancelled' };
    input.log.error({ err: error }, 'agent run failed');
    return { kind: 'failed', code: 'internal', message: describeError(error) };
  }
}

/**
 * One turn: people's new messages in, the limits checked, the transcript compacted if need be,
 * the model called, then its tool calls. Undefined: the next turn may start.
 */
async function runTurn(run: RunState, turn: number): Promise<RunOutcome | undefined> {
  if (run.input.signal.aborted || (await isStopped(run))) return { kind: 'cancelled' };
  await takeInUserMessages(run);
  const last = run.messages.at(-1);
  if (!last) return { kind: 'failed', code: 'internal', message: 'the session has no task to work on' };
  if (last.role === 'assistant') return { kind: 'finished', summary: last.content ?? '' };
  const over = overLimit(run);
  if (over) return over;
  if (!(await compactTranscript(run, turn))) return { kind: 'cancelled' };
  const taken = await takeTurnWithinWindow(run, turn);
  if ('outcome' in taken) return taken.outcome;
  const { result } = taken;
  if (result.toolCalls.length === 0) return endTextOnlyTurn(run, result);
  return executeToolCalls(run, result.toolCalls);
}

/** The runner injects unread messages before each model turn; the session's first is its task. */
async function takeInUserMessages(run: RunState): Promise<void> {
  const inbox = await unreadUserMessages(run);
  if (inbox.length === 0) return;
  const first = run.messages.length === 0;
  const messages = [];
  for (const e of inbox) {
    const { images, note } = await attachedImages(run.input.artifacts, [e]);
    const said = first && e === inbox[0] ? taskMessage(e) : quoteMessage(e);
    const content = note ? `${said}\n\n${note}` : said;
    messages.push({ message: { role: 'user' as const, content, ...(images && { images }) }, eventSeq: e.seq });
  }
  await recordStep(run, { messages });
}

/** The safety limit the run has reached, as its outcome; undefined while within all of them. */
function overLimit(run: RunState): RunOutcome | undefined {
  const { limits, costUsd, tokensUsed, toolCallCount } = run;
  const elapsed = run.now() - run.startedAt;
  if (elapsed > limits.maxWallMs) {
    return {
      ...budget(`the run reached its time limit of ${Math.round(limits.maxWallMs / 60_000)} minutes`),
      budget: { kind: 'time', spent: elapsed / 60_000, limit: limits.maxWallMs / 60_000 },
    };
  }
  if (costUsd >= limits.maxCostUsd) {
    return {
      ...budget(`the run spent $${costUsd.toFixed(2)} of its $${limits.maxCostUsd.toFixed(2)} budget`),
      budget: { kind: 'cost', spent: costUsd, limit: limits.maxCostUsd },
    };
  }
  return countLimitReached({ tokens: tokensUsed, toolCalls: toolCallCount }, limits);
}

/**
 * The run's token or tool-call limit, as the outcome that ends the run once it is reached; undefined
 * while within both. The engine relay applies the same limits to what it meters. Pure.
 */
export function countLimitReached(
  used: { tokens: number; toolCalls: number },
  limits: Pick<RunLimits, 'maxTokens' | 'maxToolCalls'>,
): Extract<RunOutcome, { kind: 'failed' }> | undefined {
  if (used.tokens > limits.maxTokens)
    return budget(`the run used ${used.tokens} tokens, over its limit of ${limits.maxTokens}`);
  if (used.toolCalls >= limits.maxToolCalls) return budget(`the run made ${used.toolCalls} tool calls, its limit`);
  return undefined;
}

function budget(message: string): Extract<RunOutcome, { kind: 'failed' }> {
  return { kind: 'failed', code: 'budget_exhausted', message };
}
