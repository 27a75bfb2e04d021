import type { EventOf } from '../core/events.ts';
import type { RunLog } from '../core/run-log.ts';
import type { SessionRecord } from '../core/session-record.ts';
import type { GateDeps } from './gates/gate-deps.ts';
import { isHuman } from './gates/harness-messages.ts';
import { routeTask, type Route } from './route-task.ts';

/**
 * The task's class, decided once per session and recorded with its budgets, and the guidance it
 * asks for (a question or a plan first) while no person has answered since the request.
 */
export async function routeSession(
  session: SessionRecord,
  gates: GateDeps,
  store: RunLog,
): Promise<{ route: Route; guidance: string[] }> {
  const events = await store.events(session.id, { types: ['task-routed', 'user-message'] });
  const routed = events.find((e) => e.event.type === 'task-routed')?.event as EventOf<'task-routed'> | undefined;
  let route: Route;
  if (routed) {
    route = { ...routeTask(session.prompt), taskClass: routed.taskClass, reason: routed.reason };
  } else {
    route = routeTask(session.prompt);
    await store.commitStep(session.id, {
      events: [
        {
          event: {
            type: 'task-routed',
            taskClass: route.taskClass,
            reason: route.reason,
            maxCostUsd: gates.maxCostUsd * route.costShare,
            maxMinutes: gates.maxMinutes * route.timeShare,
          },
          dedupeKey: 'task-routed',
        },
      ],
    });
  }
  const humans = events.filter(
    (e) => e.event.type === 'user-message' && isHuman((e.event as EventOf<'user-message'>).actor),
  );
  return { route, guidance: route.guidance && humans.length <= 1 ? [route.guidance] : [] };
}
