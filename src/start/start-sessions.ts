import { createPgArtifactStore } from '../sessions/harness-stores/pg-artifact-store.ts';
import { createKnowledgeStore } from '../sessions/harness-stores/pg-knowledge-store.ts';
import type { Logger } from 'pino';
import type { DatabaseHandle } from '../../db/database.ts';
import { traceRunQueue } from './run-tracer.ts';
import type { Config } from '../config.ts';
import { createEventBus, type EventBus } from '../sessions/notify/event-bus.ts';
import { createInboundPipeline, type InboundPipeline, type RetryPolicy } from '../sessions/inbound/inbound-pipeline.ts';
import { createRunQueue, type RunQueue } from '../sessions/worker/run-queue.ts';
import { createSessionService, type SessionService } from '../sessions/inbound/session-service.ts';
import type { EventLog } from './start-event-log.ts';
import type { RestartRecovery } from './restart-recovery.ts';
import type { Shutdown } from './shutdown.ts';

/** What a request goes through: the inbound pipeline, the session service, the run queue and the bus. */
export type SessionPipeline = { bus: EventBus; queue: RunQueue; service: SessionService; inbound: InboundPipeline };

/** Run queue tuning, for tests that kill workers. */
export type QueueTuning = {
  heartbeatSeconds?: number;
  monitorIntervalSeconds?: number;
  pollingIntervalSeconds?: number;
};
/** Inbound pipeline tuning, for tests of retries. */
export type InboundTuning = { retry?: RetryPolicy; pollingIntervalSeconds?: number };

export type SessionPipelineDeps = {
  database: DatabaseHandle;
  eventLog: EventLog;
  restarts: RestartRecovery;
  log: Logger;
  shutdown: Shutdown;
};

/** Builds the pipeline on the database; its queues are stopped before the bus at shutdown. */
export async function startSessionPipeline(
  config: Config,
  options: { work?: boolean | undefined; queue?: QueueTuning | undefined; inbound?: InboundTuning | undefined },
  deps: SessionPipelineDeps,
): Promise<SessionPipeline> {
  const { database, log, shutdown } = deps;
  const { store, tracer } = deps.eventLog;
  // The bus outlives the queue at shutdown, so a stop still reaches runs finishing their grace period.
  const bus = await createEventBus({ url: database.url, log });
  shutdown.add(() => bus.close());
  // With traces on, each run's job carries the trace context of the delivery that queued it.
  const queue = traceRunQueue(
    await createRunQueue({
      url: database.url,
      log,
      heartbeatSeconds: config.worker.heartbeatSeconds,
      monitorIntervalSeconds: config.worker.monitorIntervalSeconds,
      ...options.queue,
    }),
    tracer,
  );
  shutdown.add(() => queue.stop());
  if (database.exclusive && options.work) await reclaimFromPredecessor(queue, deps);
  const service = createSessionService({
    store,
    queue,
    log,
    artifacts: createPgArtifactStore(database.db),
    egress: { knowledge: createKnowledgeStore(database.db), protectedHosts: ownHostNames(config) },
  });
  const inbound = createInboundPipeline({
    db: database.db,
    boss: queue.boss,
    // What every delivery goes through; traced when traces are on.
    service: tracer ? { handle: tracer.traceInbound(service.handle) } : service,
    log,
    heartbeatSeconds: options.queue?.heartbeatSeconds ?? config.worker.heartbeatSeconds,
    ...(options.inbound?.retry && { retry: options.inbound.retry }),
    pollingIntervalSeconds: options.inbound?.pollingIntervalSeconds ?? options.queue?.pollingIntervalSeconds ?? 2,
    ...(config.deliveryRetentionDays !== undefined && { retentionDays: config.deliveryRetentionDays }),
  });
  return { bus, queue, service, inbound };
}

/**
 * Our own embedded database has just started: no other process can be working on its runs, so
 * runs still marked active belong to a predecessor that died. Take them back now rather than after
 * the queue's heartbeat and monitor notice (tens of seconds), and after each restart of the database.
 */
async function reclaimFromPredecessor(queue: RunQueue, deps: Pick<SessionPipelineDeps, 'restarts' | 'log'>) {
  deps.restarts.reclaimFrom(queue);
  const reclaimed = await queue.reclaimActive();
  if (reclaimed > 0)
    deps.log.info({ runs: reclaimed }, 'took back runs of a server that stopped without finishing them');
}

/** Patchbay's own endpoints by name, which no one may allow from a thread: its public URL's and its database's hosts. */
function ownHostNames(config: Config): string[] {
  const hosts = [new URL(config.publicUrl).hostname];
  if (config.databaseUrl) hosts.push(new URL(config.databaseUrl).hostname);
  return hosts;
}
