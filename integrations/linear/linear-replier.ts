import type { Logger } from 'pino';
import type { StoredEvent } from '../../src/core/events.ts';
import type { ThreadReplier, ThreadUpdate } from '../../src/core/thread-replier.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { LinearApis } from './linear-apis.ts';
import type { LinearStore } from './linear-store.ts';
import { initialPlan, renderActivities, type LinearThreadState } from './render-activities.ts';
import { stableUuid } from './stable-uuid.ts';

/** Linear marks a session stale after 30 minutes without an activity; this keeps well inside that. */
const keepAliveMs = 20 * 60_000;

/**
 * The outbound half for Linear threads: each batch of session events becomes agent activities on
 * the agent session (see render-activities.ts) and the session's plan is kept current. Activity ids
 * are derived from the event seq, so a batch delivered twice posts nothing twice. On long steps it
 * posts an ephemeral thought before Linear would call the session stale.
 */
export function createLinearReplier(deps: {
  store: LinearStore;
  apis: LinearApis;
  context: IntegrationContext;
  log: Logger;
  now?: () => number;
}): ThreadReplier {
  const { store, context } = deps;
  const now = deps.now ?? Date.now;

  function startState(events: StoredEvent[], agentSessionId: string): LinearThreadState {
    // A thread that joined a session begun elsewhere (Slack, a PR) starts after its own joining.
    const joined = events.find(
      (e) =>
        e.event.type === 'thread-added' &&
        e.event.thread.source === 'linear' &&
        e.event.thread.agentSessionId === agentSessionId,
    );
    return { shownSeq: joined?.seq ?? 0, plan: initialPlan(), openCalls: {}, lastPostedAt: now() };
  }

  return {
    source: 'linear',
    async reply({ session, thread, events, state, signal }: ThreadUpdate) {
      if (thread.source !== 'linear') return { state };
      const row = await store.agentSession(thread.agentSessionId);
      if (!row) return { state };
      const api = await deps.apis.forOrganization(row.organizationId);
      const fresh = (await context.sessions.get(session.id)) ?? session;
      const previous = (state as LinearThreadState | undefined) ?? startState(events, thread.agentSessionId);
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
      if (
        JSON.stringify(next.plan) !== JSON.stringify(previous.plan) ||
        (state === undefined && activities.length > 0)
      ) {
        await api
          .updateSession(thread.agentSessionId, { plan: next.plan }, signal)
          .catch((error: unknown) =>
            deps.log.warn({ err: error, sessionId: session.id }, 'could not update the Linear plan'),
          );
      }
      return { state: next };
    },
    async refresh({ session, thread, state, signal }) {
      if (thread.source !== 'linear' || !state) return { state };
      const current = state as LinearThreadState;
      if (now() - current.lastPostedAt < keepAliveMs) return { state };
      const row = await store.agentSession(thread.agentSessionId);
      if (!row) return { state };
      const api = await deps.apis.forOrganization(row.organizationId);
      const minutes = Math.round((now() - Date.parse(session.updatedAt)) / 60_000);
      await api.postActivity(
        thread.agentSessionId,
        {
          content: { type: 'thought', body: `Still working${minutes > 0 ? ` (${minutes} min on this step)` : ''}.` },
          ephemeral: true,
        },
        signal,
      );
      return { state: { ...current, lastPostedAt: now() } };
    },
  };
}
