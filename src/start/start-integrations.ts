import type { Logger } from 'pino';
import type { IntegrationModule } from '../../integrations/integration-module.ts';
import {
  startIntegrations,
  type IntegrationHealth,
  type StartedIntegrations,
  type StartRetry,
} from '../api/integration-health.ts';
import type { DeliveryInterpreter } from '../core/delivery-interpreter.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { EventBus } from '../sessions/notify/event-bus.ts';
import type { InboundPipeline } from '../sessions/inbound/inbound-pipeline.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import { startThreadNotifier } from '../sessions/notify/thread-notifier.ts';
import type { Shutdown } from './shutdown.ts';

/** The thread notifier: each module's replier shows its sessions' progress in their threads. */
export function startThreadReplies(
  modules: readonly IntegrationModule[],
  deps: { store: SessionStore; db: Kysely<Database>; bus: EventBus; log: Logger; shutdown: Shutdown },
): void {
  if (modules.length === 0) return;
  const notifier = startThreadNotifier({
    store: deps.store,
    db: deps.db,
    bus: deps.bus,
    repliers: modules.map((m) => m.replier),
    log: deps.log,
  });
  deps.shutdown.add(() => notifier.close());
}

/**
 * Starts the integrations (their background connections, reported on `/healthz`), then works the
 * deliveries stored by any process (or before a crash) through their interpreters; the pipeline stops
 * before the integrations at shutdown.
 */
export async function connectIntegrations(
  modules: readonly IntegrationModule[],
  interpreters: readonly DeliveryInterpreter<unknown>[],
  deps: {
    inbound: InboundPipeline;
    health: IntegrationHealth;
    retry?: StartRetry | undefined;
    log: Logger;
    shutdown: Shutdown;
  },
): Promise<StartedIntegrations> {
  const integrations = await startIntegrations(modules, {
    log: deps.log,
    health: deps.health,
    ...(deps.retry && { retry: deps.retry }),
  });
  deps.shutdown.add(() => integrations.stop());
  if (interpreters.length > 0) {
    await deps.inbound.start(interpreters);
    deps.shutdown.add(() => deps.inbound.stop());
  }
  return integrations;
}
