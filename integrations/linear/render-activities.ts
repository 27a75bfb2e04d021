import { modeNotice } from '../../src/core/session-mode.ts';
import { approvalActivity } from './linear-approvals.ts';
import { egressActivity } from './linear-egress.ts';
import { modelWaitNotice } from '../../src/core/model-notice.ts';
import { queueNotice } from '../../src/core/queue-notice.ts';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import { describeToolCall } from '../../src/core/tool-call.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { Activity, PlanStep } from './linear-api.ts';
import { repoRefusedNotice } from '../../src/core/repo-access.ts';

/** Tools whose steps are noise in the Linear timeline: shown while they run, then replaced. */
const noisyTools = new Set(['read_file', 'list_files', 'search', 'git_status', 'git_diff']);

const planTitles = [
  'Prepare the workspace',
  'Make the changes',
  'Commit and push the branch',
  'Open the pull request',
] as const;

/** What the thread remembers between deliveries. */
export type LinearThreadState = {
  /** Events up to this seq were shown (or were from before the thread joined). */
  shownSeq: number;
  plan: PlanStep[];
  /** Tool inputs of calls still running at the end of the last batch, for the action's parameter. */
  openCalls: Record<string, { name: string; parameter: string }>;
  lastPostedAt: number;
  /** The sub-tasks' steps as the plan last showed them (linear-subtasks.ts); `plan` holds the session's own. */
  subtasks?: PlanStep[];
  prUrl?: string;
  /**
   * The session's final activity was posted (done, failed, stopped). Steps a stopped run records
   * after that (its killed command) are not shown: Linear would read them as the agent still working.
   */
  ended?: boolean;
};

export const initialPlan = (): PlanStep[] => planTitles.map((content) => ({ content, status: 'pending' }));

type Rendered = Activity & { seed: string };
type SessionView = Pick<SessionRecord, 'status' | 'result' | 'error' | 'repo'>;
type EventOf<T extends SessionEvent['type']> = Extract<SessionEvent, { type: T }>;

/** What rendering one event reads and changes: the thread's state, the session, its page link. */
type RenderContext = { state: LinearThreadState; session: SessionView; sessionLink: string };

/**
 * Turns a batch of session events into Linear agent activities and the session plan: thoughts for
 * phases, an action per finished tool step (noisy ones ephemeral), an elicitation per question
 * (select options when it offers choices), and the final response (summary, PR and session links)
 * or error. Pure, so the mapping is table-tested; ids come from the event seq, so a repeated batch
 * posts the same activities again with the same ids.
 */
export function renderActivities(input: {
  events: StoredEvent[];
  state: LinearThreadState;
  session: SessionView;
  sessionUrl: string;
}): { activities: Rendered[]; state: LinearThreadState } {
  const state: LinearThreadState = {
    ...input.state,
    plan: input.state.plan.map((s) => ({ ...s })),
    openCalls: { ...input.state.openCalls },
  };
  const context: RenderContext = {
    state,
    session: input.session,
    sessionLink: `[Patchbay session](${input.sessionUrl})`,
  };
  const activities: Rendered[] = [];
  for (const { seq, event } of input.events) {
    if (seq <= state.shownSeq) continue;
    if (event.type === 'status-changed') state.ended = ['completed', 'failed', 'cancelled'].includes(event.to);
    if (event.type === 'user-message') state.ended = false;
    const activity = activityFor(event, context);
    if (activity && shownAfterEnd(state, activity)) activities.push({ ...activity, seed: `${seq}:0` });
    state.shownSeq = seq;
  }
  return { activities, state };
}

/** Once the session ended, only what ends it (or asks) is shown. */
function shownAfterEnd(state: LinearThreadState, activity: Activity): boolean {
  const { type } = activity.content;
  return !state.ended || type === 'response' || type === 'error' || type === 'elicitation';
}

/** The one activity an event shows in Linear, if any; updates the plan and the thread's state on the way. */
function activityFor(event: SessionEvent, context: RenderContext): Activity | undefined {
  const { state } = context;
  switch (event.type) {
    case 'user-message':
      // Linear shows its own prompts; words from Slack or GitHub are news here.
      if (event.actor.source === 'linear' || event.actor.source === 'system') return undefined;
      return thought(`${event.actor.name} wrote on ${sourceName(event.actor.source)}:\n\n${quote(event.text)}`);
    case 'status-changed':
      return statusActivity(event, context);
    case 'queue-waiting':
    case 'queue-started':
      return thought(queueNotice(event));
    case 'model-waiting':
      return thought(modelWaitNotice(event));
    case 'workspace-ready':
      markStep(state.plan, 'Prepare the workspace', 'completed');
      markStep(state.plan, 'Make the changes', 'inProgress');
      return thought(`Workspace ready on branch \`${event.branch}\` (from \`${event.baseBranch}\`).`);
    case 'tool-start':
      return toolStartActivity(event, state);
    case 'tool-end':
      return toolEndActivity(event, state);
    case 'question-asked': {
      const choices = event.choices ?? [];
      const body = `${event.question}${event.recommended ? `\n\nI recommend: ${event.recommended}` : ''}`;
      return {
        content: { type: 'elicitation', body },
        ...(choices.length > 0 && { options: choices.map((value) => ({ value })) }),
      };
    }
    case 'approval-requested':
    case 'approval-decided':
      return approvalActivity(event);
    case 'egress-blocked':
    case 'egress-allowed':
      return egressActivity(event);
    case 'repo-refused':
      return thought(repoRefusedNotice(event));
    case 'publish-notice':
      return thought(event.text);
    case 'mode-chosen':
      return thought(modeNotice(event));
    case 'check-finished':
      return checkActivity(event, state);
    case 'verification-finished':
      markStep(state.plan, 'Run the checks', 'completed', true);
      markStep(state.plan, 'Verify the work', event.outcome === 'passed' ? 'completed' : 'inProgress');
      return thought(
        `Verification ${event.outcome === 'not-run' ? 'did not run' : event.outcome}: ${clip(event.summary, 1000)}`,
      );
    case 'review-gate':
      if (event.ready || !event.reasons.length) return undefined;
      return thought(`Not marking the pull request ready: ${clip(event.reasons.join('; '), 1000)}`);
    case 'budget-reached':
      return thought(`The ${event.kind} budget is spent (${event.spent} of ${event.limit}).`);
    case 'ci-failed':
      return thought(
        `CI failed on the pull request: ${event.name}${event.url ? ` (${event.url})` : ''}.${event.followUp ? ' Working on a fix.' : event.reason ? ` ${event.reason}` : ''}`,
      );
    case 'branch-pushed':
      for (const step of state.plan) if (step.content !== 'Open the pull request') step.status = 'completed';
      markStep(state.plan, 'Open the pull request', 'inProgress');
      return thought(`Pushed \`${event.commit.slice(0, 12)}\` to \`${event.branch}\`.`);
    case 'pr-opened':
      markStep(state.plan, 'Open the pull request', 'completed');
      state.prUrl = event.url;
      return thought(`Pull request: ${event.url}`);
    default:
      return undefined;
  }
}

/** Running, and the three ends: the final response (or error) with the session link. */
function statusActivity(event: EventOf<'status-changed'>, context: RenderContext): Activity | undefined {
  const { state, session, sessionLink } = context;
  if (event.to === 'running') {
    if (state.plan[0]?.status === 'pending') markStep(state.plan, 'Prepare the workspace', 'inProgress');
    return event.from === 'queued'
      ? { content: { type: 'thought', body: 'Working on it.' }, ephemeral: true }
      : undefined;
  }
  if (event.to === 'completed') {
    const pr = state.prUrl ?? session.result?.prUrl;
    const summary = session.result?.summary?.trim();
    finishPlan(state.plan, pr || session.result?.commit ? 'completed' : 'canceled');
    if (session.result?.answered) return response(`${clip(summary || 'No answer.', 6000)}\n\n${sessionLink}`);
    const outcome = session.result?.unpushed
      ? session.result.unpushed
      : pr
        ? `Pull request: ${pr}`
        : session.result?.commit
          ? `Pushed ${session.result.commit.slice(0, 12)}.`
          : 'No changes were needed.';
    return response(`${summary ? `${clip(summary, 4000)}\n\n` : ''}${outcome}\n\n${sessionLink}`);
  }
  if (event.to === 'failed') {
    finishPlan(state.plan, 'canceled');
    const reason = clip(event.reason ?? session.error ?? 'the run failed', 2000);
    return { content: { type: 'error', body: `I could not finish: ${reason}\n\n${sessionLink}` } };
  }
  if (event.to === 'cancelled') {
    finishPlan(state.plan, 'canceled');
    const pushed = state.plan.find((p) => p.content === 'Commit and push the branch')?.status === 'completed';
    const sofar = state.prUrl
      ? `So far: ${state.prUrl}`
      : pushed
        ? 'So far the changes are pushed to the session branch.'
        : 'Nothing was pushed.';
    return response(`Stopped${event.reason ? ` (${event.reason})` : ''}. ${sofar}\n\n${sessionLink}`);
  }
  return undefined;
}

function toolStartActivity(event: EventOf<'tool-start'>, state: LinearThreadState): Activity | undefined {
  const call = describeToolCall(event.name, event.input);
  state.openCalls[event.callId] = { name: event.name, parameter: call.detail };
  if (noisyTools.has(event.name)) return undefined;
  return { content: { type: 'action', action: call.action, parameter: call.detail }, ephemeral: true };
}

function toolEndActivity(event: EventOf<'tool-end'>, state: LinearThreadState): Activity {
  const call = state.openCalls[event.callId];
  delete state.openCalls[event.callId];
  const result = event.isError ? `Failed: ${firstLines(event.output)}` : firstLines(event.output) || 'done';
  return {
    content: {
      type: 'action',
      action: describeToolCall(event.name, undefined).action,
      parameter: call?.parameter ?? '',
      result,
    },
    ...(noisyTools.has(event.name) && { ephemeral: true }),
  };
}

function checkActivity(event: EventOf<'check-finished'>, state: LinearThreadState): Activity {
  const step = event.phase === 'setup' ? 'Set up' : 'Check';
  if (event.phase === 'check') markStep(state.plan, 'Run the checks', 'inProgress');
  const result =
    event.outcome === 'passed'
      ? 'passed'
      : `${event.outcome}${event.reason ? `: ${event.reason}` : ''}${event.logTail.trim() ? `\n${firstLines(lastLines(event.logTail))}` : ''}`;
  return { content: { type: 'action', action: step, parameter: `${event.name}: ${event.command}`, result } };
}

/** Sets a step's status; the checks and the verdict join the plan when the harness runs them. */
function markStep(plan: PlanStep[], content: string, status: PlanStep['status'], onlyIfPresent = false): void {
  let step = plan.find((s) => s.content === content);
  if (!step) {
    if (onlyIfPresent) return;
    step = { content, status };
    const at = plan.findIndex((s) => s.content === 'Commit and push the branch');
    plan.splice(at < 0 ? plan.length : at, 0, step);
    // Steps before a new one are behind it.
    for (const before of plan.slice(0, plan.indexOf(step)))
      if (before.status === 'inProgress' || before.status === 'pending') before.status = 'completed';
  }
  step.status = status;
}

/** Every step not done yet ends as `outcome`. */
function finishPlan(plan: PlanStep[], outcome: PlanStep['status']): void {
  for (const step of plan) if (step.status === 'pending' || step.status === 'inProgress') step.status = outcome;
}

const thought = (body: string): Activity => ({ content: { type: 'thought', body } });
const response = (body: string): Activity => ({ content: { type: 'response', body } });

function sourceName(source: string): string {
  return source === 'github' ? 'GitHub' : source === 'slack' ? 'Slack' : source === 'web' ? 'the web page' : source;
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-3).join('\n');
}

function firstLines(text: string): string {
  return clip(text.trim().split('\n').slice(0, 3).join('\n'), 300);
}

function quote(text: string): string {
  return clip(text, 2000)
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
