import { queueNotice } from '../../src/core/queue-notice.ts';
import type { StoredEvent } from '../../src/core/events.ts';
import { describeToolCall } from '../../src/core/tool-call.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { Activity, PlanStep } from './linear-api.ts';

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
  prUrl?: string;
  /**
   * The session's final activity was posted (done, failed, stopped). Steps a stopped run records
   * after that (its killed command) are not shown: Linear would read them as the agent still working.
   */
  ended?: boolean;
};

export const initialPlan = (): PlanStep[] => planTitles.map((content) => ({ content, status: 'pending' }));

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
  session: Pick<SessionRecord, 'status' | 'result' | 'error' | 'repo'>;
  sessionUrl: string;
}): { activities: (Activity & { seed: string })[]; state: LinearThreadState } {
  const { sessionUrl } = input;
  const state: LinearThreadState = {
    ...input.state,
    plan: input.state.plan.map((s) => ({ ...s })),
    openCalls: { ...input.state.openCalls },
  };
  const activities: (Activity & { seed: string })[] = [];
  /** Sets a step's status; the checks and the verdict join the plan when the harness runs them. */
  const markStep = (content: string, status: PlanStep['status'], onlyIfPresent = false) => {
    let step = state.plan.find((s) => s.content === content);
    if (!step) {
      if (onlyIfPresent) return;
      step = { content, status };
      const at = state.plan.findIndex((s) => s.content === 'Commit and push the branch');
      state.plan.splice(at < 0 ? state.plan.length : at, 0, step);
      // Steps before a new one are behind it.
      for (const before of state.plan.slice(0, state.plan.indexOf(step)))
        if (before.status === 'inProgress' || before.status === 'pending') before.status = 'completed';
    }
    step.status = status;
  };
  const finishPlan = (outcome: PlanStep['status']) => {
    for (const step of state.plan) if (step.status === 'pending' || step.status === 'inProgress') step.status = outcome;
  };
  const sessionLink = `[Patchbay session](${sessionUrl})`;

  for (const { seq, event } of input.events) {
    if (seq <= state.shownSeq) continue;
    const add = (activity: Activity, part = 0) => {
      if (
        !state.ended ||
        activity.content.type === 'response' ||
        activity.content.type === 'error' ||
        activity.content.type === 'elicitation'
      )
        activities.push({ ...activity, seed: `${seq}:${part}` });
    };
    if (event.type === 'status-changed') state.ended = ['completed', 'failed', 'cancelled'].includes(event.to);
    if (event.type === 'user-message') state.ended = false;
    switch (event.type) {
      case 'user-message':
        // Linear shows its own prompts; words from Slack or GitHub are news here.
        if (event.actor.source !== 'linear' && event.actor.source !== 'system') {
          add({
            content: {
              type: 'thought',
              body: `${event.actor.name} wrote on ${sourceName(event.actor.source)}:\n\n${quote(event.text)}`,
            },
          });
        }
        break;
      case 'status-changed':
        if (event.to === 'running') {
          if (state.plan[0]?.status === 'pending') markStep('Prepare the workspace', 'inProgress');
          if (event.from === 'queued') add({ content: { type: 'thought', body: 'Working on it.' }, ephemeral: true });
        } else if (event.to === 'completed') {
          const pr = state.prUrl ?? input.session.result?.prUrl;
          const summary = input.session.result?.summary?.trim();
          if (pr) finishPlan('completed');
          else finishPlan(input.session.result?.commit ? 'completed' : 'canceled');
          const outcome = pr
            ? `Pull request: ${pr}`
            : input.session.result?.commit
              ? `Pushed ${input.session.result.commit.slice(0, 12)}.`
              : 'No changes were needed.';
          add({
            content: {
              type: 'response',
              body: `${summary ? `${clip(summary, 4000)}\n\n` : ''}${outcome}\n\n${sessionLink}`,
            },
          });
        } else if (event.to === 'failed') {
          finishPlan('canceled');
          add({
            content: {
              type: 'error',
              body: `I could not finish: ${clip(event.reason ?? input.session.error ?? 'the run failed', 2000)}\n\n${sessionLink}`,
            },
          });
        } else if (event.to === 'cancelled') {
          finishPlan('canceled');
          const pushed = state.plan.find((p) => p.content === 'Commit and push the branch')?.status === 'completed';
          const sofar = state.prUrl
            ? `So far: ${state.prUrl}`
            : pushed
              ? 'So far the changes are pushed to the session branch.'
              : 'Nothing was pushed.';
          add({
            content: {
              type: 'response',
              body: `Stopped${event.reason ? ` (${event.reason})` : ''}. ${sofar}\n\n${sessionLink}`,
            },
          });
        }
        break;
      case 'queue-waiting':
      case 'queue-started':
        add({ content: { type: 'thought', body: queueNotice(event) } });
        break;
      case 'workspace-ready':
        markStep('Prepare the workspace', 'completed');
        markStep('Make the changes', 'inProgress');
        add({
          content: {
            type: 'thought',
            body: `Workspace ready on branch \`${event.branch}\` (from \`${event.baseBranch}\`).`,
          },
        });
        break;
      case 'tool-start': {
        const call = describeToolCall(event.name, event.input);
        state.openCalls[event.callId] = { name: event.name, parameter: call.detail };
        if (!noisyTools.has(event.name))
          add({ content: { type: 'action', action: call.action, parameter: call.detail }, ephemeral: true });
        break;
      }
      case 'tool-end': {
        const call = state.openCalls[event.callId];
        delete state.openCalls[event.callId];
        const result = event.isError ? `Failed: ${firstLines(event.output)}` : firstLines(event.output) || 'done';
        add({
          content: {
            type: 'action',
            action: describeToolCall(event.name, undefined).action,
            parameter: call?.parameter ?? '',
            result,
          },
          ...(noisyTools.has(event.name) && { ephemeral: true }),
        });
        break;
      }
      case 'question-asked': {
        const choices = event.choices ?? [];
        const body = `${event.question}${event.recommended ? `\n\nI recommend: ${event.recommended}` : ''}`;
        add({
          content: { type: 'elicitation', body },
          ...(choices.length > 0 && { options: choices.map((value) => ({ value })) }),
        });
        break;
      }
      case 'check-finished': {
        const step = event.phase === 'setup' ? 'Set up' : 'Check';
        if (event.phase === 'check') markStep('Run the checks', 'inProgress');
        const result =
          event.outcome === 'passed'
            ? 'passed'
            : `${event.outcome}${event.reason ? `: ${event.reason}` : ''}${event.logTail.trim() ? `\n${firstLines(lastLines(event.logTail))}` : ''}`;
        add({ content: { type: 'action', action: step, parameter: `${event.name}: ${event.command}`, result } });
        break;
      }
      case 'verification-finished':
        markStep('Run the checks', 'completed', true);
        markStep('Verify the work', event.outcome === 'passed' ? 'completed' : 'inProgress');
        add({
          content: {
            type: 'thought',
            body: `Verification ${event.outcome === 'not-run' ? 'did not run' : event.outcome}: ${clip(event.summary, 1000)}`,
          },
        });
        break;
      case 'review-gate':
        if (!event.ready && event.reasons.length)
          add({
            content: {
              type: 'thought',
              body: `Not marking the pull request ready: ${clip(event.reasons.join('; '), 1000)}`,
            },
          });
        break;
      case 'budget-reached':
        add({
          content: { type: 'thought', body: `The ${event.kind} budget is spent (${event.spent} of ${event.limit}).` },
        });
        break;
      case 'ci-failed':
        add({
          content: {
            type: 'thought',
            body: `CI failed on the pull request: ${event.name}${event.url ? ` (${event.url})` : ''}.${event.followUp ? ' Working on a fix.' : event.reason ? ` ${event.reason}` : ''}`,
          },
        });
        break;
      case 'branch-pushed':
        for (const step of state.plan) if (step.content !== 'Open the pull request') step.status = 'completed';
        markStep('Open the pull request', 'inProgress');
        add({ content: { type: 'thought', body: `Pushed \`${event.commit.slice(0, 12)}\` to \`${event.branch}\`.` } });
        break;
      case 'pr-opened':
        markStep('Open the pull request', 'completed');
        state.prUrl = event.url;
        add({ content: { type: 'thought', body: `Pull request: ${event.url}` } });
        break;
      default:
        break;
    }
    state.shownSeq = seq;
  }
  return { activities, state };
}

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
