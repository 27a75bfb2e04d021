import type { Logger } from 'pino';
import type { DatabaseHandle } from '../../db/database.ts';
import { createMetrics, type Metrics } from '../api/metrics.ts';
import { observeStore } from '../api/observed-store.ts';
import { startRunTracer, type RunTracer } from './run-tracer.ts';
import type { Config } from '../config.ts';
import { createSessionStore, type SessionStore } from '../sessions/store/session-store.ts';
import type { Shutdown } from './shutdown.ts';

/** The session store, seen by this process's metrics and (with OTEL_EXPORTER_OTLP_ENDPOINT) traces. */
export type EventLog = { store: SessionStore; metrics: Metrics; tracer?: RunTracer | undefined };

/** Metrics (and traces) see what this process writes to the event log. */
export async function startEventLog(
  config: Config,
  deps: { database: DatabaseHandle; role: 'serve' | 'api' | 'worker'; log: Logger; shutdown: Shutdown },
): Promise<EventLog> {
  const metrics = createMetrics({ db: deps.database.db, provider: String(config.model.provider), role: deps.role });
  const tracer = config.otlpEndpoint
    ? await startRunTracer({ endpoint: config.otlpEndpoint, log: deps.log })
    : undefined;
  if (tracer) deps.shutdown.add(() => tracer.shutdown());
  const store = observeStore(createSessionStore(deps.database.db), tracer ? [metrics, tracer] : [metrics]);
  return { store, metrics, tracer };
}
