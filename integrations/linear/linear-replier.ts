import type { Logger } from 'pino';
import type { StoredEvent } from '../../src/core/events.ts';
import type { ThreadReplier, ThreadUpdate } from '../../src/core/thread-replier.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { LinearApis } from './linear-apis.ts';
import type { LinearApi, PlanStep } from './linear-api.ts';
import { planWithSubtasks, subtaskSteps } from './linear-subtasks.ts';
import type { LinearStore } from './linear-store.ts';
import { initialPlan, renderActivities, type LinearThreadState } from './render-activities.ts';
import { stableUuid } from './stable-uuid.ts';

/** Linear marks a session stale after 30 minutes without an activity; by default this keeps well inside that. */
export const DEFAULT_KEEPALIVE_MS = 20 * 60_000;

/**
 * The outbound half for Linear threads: each batch of session events becomes agent activities on
 * the agent session (see render-activities.ts) and the session's plan is kept current. Activity ids
 * are derived from the event seq, so a batch delivered twice posts nothing twice. On long steps it
 * posts an ephemeral thought before Linear would call the session stale.
 */
export function createLinearReplier(deps: {
  store: LinearStore;
  apis: LinearApis;
  context: IntegrationContext<'linear'>;
  log: Logger;
  now?: () => number;
  /** Silence after which a running session gets a thought saying what it is doing (LINEAR_KEEPALIVE_SECONDS). */
  keepAliveMs?: number | undefined;
}): ThreadReplier {
  const { store, context } = deps;
  const now = deps.now ?? Date.now;
  const keepAliveMs = deps.keepAliveMs ?? DEFAULT_KEEPALIVE_MS;

  return {
    source: 'linear',
    // Refreshed often enough that the keep-alive comes within a quarter of its silence late.
    refreshEveryMs: Math.min(60_000, Math.max(250, Math.floor(keepAliveMs / 4))),
    async reply({ session, thread, events, state, signal, children }: ThreadUpdate) {
      if (thread.source !== 'linear') return { state };
      const row = await store.agentSession(thread.agentSessionId);
      if (!row) return { state };
      const api = await deps.apis.forOrganization(row.organizationId);
      const fresh = (await context.sessions.get(session.id)) ?? session;
      const previous = (state as LinearThreadState | undefined) ?? startState(events, thread.agentSessionId, now());
      const { activities, state: next } = renderActivities({
        events,
        state: previous,
        session: fresh,
        sessionUrl: `${context.publicUrl}/sessions/${session.id}`,
      });
      for (const { seed, ...activity } of activities) {
        await api.postActivity(
          thread.agentSessionId,
          { ...activity, id: stableUuid(`${thread.agentSessionId}:${session.id}:${seed}`) },
          signal,
        );
        next.lastPostedAt = now();
      }
      const subtasks = subtaskSteps(children, fresh);
      if (planChanged(previous, next.plan, subtasks) || (state === undefined && activities.length > 0))
        await updatePlan(api, thread.agentSessionId, planWithSubtasks(next.plan, subtasks), session.id, signal);
      return { state: { ...next, subtasks } };
    },
    /** Shows the sub-tasks' progress in the plan, and keeps a long step from looking stale. */
    async refresh({ session, thread, state, signal, children }) {
      if (thread.source !== 'linear' || !state) return { state };
      let current = state as LinearThreadState;
      const subtasks = subtaskSteps(children, session);
      const replan = planChanged(current, current.plan, subtasks);
      const stale = now() - current.lastPostedAt >= keepAliveMs;
      if (!replan && !stale) return { state };
      const row = await store.agentSession(thread.agentSessionId);
      if (!row) return { state };
      const api = await deps.apis.forOrganization(row.organizationId);
      if (replan) {
        await updatePlan(api, thread.agentSessionId, planWithSubtasks(current.plan, subtasks), session.id, signal);
        current = { ...current, subtasks };
      }
      if (!stale) return { state: current };
      const body = keepAliveThought(current, now() - Date.parse(session.updatedAt));
      await api.postActivity(thread.agentSessionId, { content: { type: 'thought', body }, ephemeral: true }, signal);
      return { state: { ...current, lastPostedAt: now() } };
    },
  };

  /** Replaces the agent session's plan; a plan Linear refuses is logged, never a failed reply. */
  async function updatePlan(
    api: LinearApi,
    agentSessionId: string,
    plan: PlanStep[],
    sessionId: string,
    signal: AbortSignal,
  ): Promise<void> {
    await api
      .updateSession(agentSessionId, { plan }, signal)
      .catch((error: unknown) => deps.log.warn({ err: error, sessionId }, 'could not update the Linear plan'));
  }
}

/**
 * The keep-alive: what the run is doing now (the command still running, else the plan's step in
 * progress) and for how long, so the thought tells the person something and not only that it lives.
 */
export function keepAliveThought(state: LinearThreadState, sinceMs: number): string {
  const minutes = Math.round(sinceMs / 60_000);
  const running = Object.values(state.openCalls).at(-1);
  const doing = running
    ? `running ${running.parameter ? `\`${running.parameter.replace(/`/g, "'").slice(0, 200)}\`` : running.name}`
    : state.plan.find((step) => step.status === 'inProgress')?.content.toLowerCase();
  return `Still working${doing ? `: ${doing}` : ''}${minutes > 0 ? ` (${minutes} min on this step)` : ''}.`;
}

/**
 * A thread's state before its first reply. A thread that joined a session begun elsewhere (Slack, a
 * pull request) starts after its own joining.
 */
function startState(events: StoredEvent[], agentSessionId: string, postedAt: number): LinearThreadState {
  const joined = events.find(
    (e) =>
      e.event.type === 'thread-added' &&
      e.event.thread.source === 'linear' &&
      e.event.thread.agentSessionId === agentSessionId,
  );
  return { shownSeq: joined?.seq ?? 0, plan: initialPlan(), openCalls: {}, lastPostedAt: postedAt };
}

/** Whether the plan to show differs from the one the thread showed last (its own steps or its sub-tasks'). */
function planChanged(shown: LinearThreadState, plan: PlanStep[], subtasks: PlanStep[]): boolean {
  return (
    JSON.stringify(plan) !== JSON.stringify(shown.plan) ||
    JSON.stringify(subtasks) !== JSON.stringify(shown.subtasks ?? [])
  );
}
