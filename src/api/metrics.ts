import { sql } from 'kysely';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Db } from '../../db/database.ts';
import type { SessionEvent, StoredEvent } from '../core/events.ts';
import type { SessionStatus } from '../core/session-status.ts';
import { eventCostUsd } from '../models/model-catalog.ts';
import type { StoreObserver } from './observed-store.ts';

export type Metrics = StoreObserver & {
  /** The Prometheus text exposition of every metric, for GET /metrics. */
  render(): Promise<string>;
  readonly contentType: string;
};

const seconds = [0.05, 0.25, 1, 5, 15, 60, 300, 900, 3600];

/**
 * Patchbay's metrics. Counters and histograms count what this process wrote to the event log
 * (tokens, tool calls, checks, verdicts, refusals, limit hits, run and turn durations), so summing
 * them over processes is right; the gauges (sessions by state and surface, the queue, deliveries)
 * are read from the database at scrape time and are the same in every process (use max()).
 */
export function createMetrics(options: { db: Db; provider: string; role: string }): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ role: options.role });
  collectDefaultMetrics({ register: registry, prefix: 'patchbay_process_' });
  const { db, provider } = options;
  const runs = new Histogram({
    name: 'patchbay_run_duration_seconds',
    help: 'Time of one run of a session, by how it ended (completed, failed, cancelled, waiting).',
    labelNames: ['outcome'],
    buckets: seconds,
    registers: [registry],
  });

  databaseGauges(registry, db);

  const runStarts = new Map<string, number>();
  const lastStep = new Map<string, number>();
  const onEvent = eventCounters(registry, provider, lastStep);

  return {
    contentType: registry.contentType,
    render: () => registry.metrics(),
    onEvents: (events) => events.forEach(onEvent),
    onStatus(sessionId: string, from: SessionStatus, to: SessionStatus) {
      if (to === 'running') {
        runStarts.set(sessionId, Date.now());
        lastStep.set(sessionId, Date.now());
        return;
      }
      const started = runStarts.get(sessionId);
      if (from !== 'running' || started === undefined) return;
      runs.observe({ outcome: to }, (Date.now() - started) / 1000);
      runStarts.delete(sessionId);
      lastStep.delete(sessionId);
    },
  };
}

/** Gauges read from the database at scrape time: the same in every process sharing it. */
function databaseGauges(registry: Registry, db: Db): void {
  new Gauge({
    name: 'patchbay_sessions',
    help: 'Sessions by status and the surface they were started from.',
    labelNames: ['status', 'surface'],
    registers: [registry],
    async collect() {
      const rows = await sql<{
        status: string;
        surface: string | null;
        n: string;
      }>`select status, requester->>'source' as surface, count(*) as n from sessions group by 1, 2`.execute(db);
      this.reset();
      for (const row of rows.rows) this.set({ status: row.status, surface: row.surface ?? 'unknown' }, Number(row.n));
    },
  });
  new Gauge({
    name: 'patchbay_queue_depth',
    help: 'Sessions queued for a run and not yet taken by a worker.',
    registers: [registry],
    async collect() {
      const { rows } = await sql<{ n: string }>`select count(*) as n from sessions where status = 'queued'`.execute(db);
      this.set(Number(rows[0]?.n ?? 0));
    },
  });
  new Gauge({
    name: 'patchbay_webhook_deliveries',
    help: 'Stored webhook deliveries (within DELIVERY_RETENTION_DAYS) by source and status (pending, done, ignored, failed).',
    labelNames: ['source', 'status'],
    registers: [registry],
    async collect() {
      const { rows } = await sql<{
        source: string;
        status: string;
        n: string;
      }>`select source, status, count(*) as n from inbound_deliveries group by 1, 2`.execute(db);
      this.reset();
      for (const row of rows) this.set({ source: row.source, status: row.status }, Number(row.n));
    },
  });
}

/**
 * The counters and histograms of what the event log records; `lastStep` (per session, the time of
 * the run's last step) is shared with the run bookkeeping for turn durations.
 */
function eventCounters(
  registry: Registry,
  provider: string,
  lastStep: Map<string, number>,
): (stored: StoredEvent) => void {
  const metrics = eventMetrics(registry);
  return (stored) => countEvent(metrics, { provider, lastStep }, stored);
}

type EventMetrics = ReturnType<typeof eventMetrics>;

function eventMetrics(registry: Registry) {
  const registers = [registry];
  return {
    tokens: new Counter({
      name: 'patchbay_model_tokens_total',
      help: 'Model tokens by provider, model and kind (input, output, cache_read, cache_write).',
      labelNames: ['provider', 'model', 'kind'],
      registers,
    }),
    cost: new Counter({
      name: 'patchbay_model_cost_usd_total',
      help: 'Estimated model cost in US dollars (list prices) by provider and model.',
      labelNames: ['provider', 'model'],
      registers,
    }),
    turns: new Histogram({
      name: 'patchbay_turn_duration_seconds',
      help: 'Time of one agent turn (model call and the step it records), by model.',
      labelNames: ['model'],
      buckets: seconds,
      registers,
    }),
    tools: new Counter({
      name: 'patchbay_tool_calls_total',
      help: 'Tool calls by tool name and outcome (ok, error).',
      labelNames: ['tool', 'outcome'],
      registers,
    }),
    toolTime: new Histogram({
      name: 'patchbay_tool_duration_seconds',
      help: 'Tool call durations by tool name.',
      labelNames: ['tool'],
      buckets: seconds,
      registers,
    }),
    checks: new Counter({
      name: 'patchbay_checks_total',
      help: 'Setup and check commands by phase, name and outcome.',
      labelNames: ['phase', 'name', 'outcome'],
      registers,
    }),
    checkTime: new Histogram({
      name: 'patchbay_check_duration_seconds',
      help: 'Setup and check command durations by phase.',
      labelNames: ['phase'],
      buckets: seconds,
      registers,
    }),
    verdicts: new Counter({
      name: 'patchbay_verdicts_total',
      help: 'Independent verifier verdicts by outcome (passed, failed, not-run).',
      labelNames: ['outcome'],
      registers,
    }),
    egress: new Counter({
      name: 'patchbay_egress_refusals_total',
      help: 'Connections from sandboxes the egress proxy refused, by reason.',
      labelNames: ['reason'],
      registers,
    }),
    limits: new Counter({
      name: 'patchbay_sandbox_limit_hits_total',
      help: 'Sandbox commands ended or failed by a resource limit, by kind.',
      labelNames: ['kind'],
      registers,
    }),
    queueWait: new Histogram({
      name: 'patchbay_queue_wait_seconds',
      help: 'Time a session waited for a run slot before a worker took it.',
      buckets: seconds,
      registers,
    }),
  };
}

function countEvent(
  metrics: EventMetrics,
  runs: { provider: string; lastStep: Map<string, number> },
  stored: StoredEvent,
): void {
  const { event } = stored;
  switch (event.type) {
    case 'usage':
      countUsage(metrics, runs, stored.sessionId, event);
      return;
    case 'tool-end': {
      metrics.tools.inc({ tool: event.name, outcome: event.isError ? 'error' : 'ok' });
      metrics.toolTime.observe({ tool: event.name }, event.durationMs / 1000);
      // The shell tool's words for a limit (shell-tool.ts), the only place the kind reaches the log.
      const limit = /^Sandbox limit reached: .*?\b(processes|memory|cpu|file-size|disk)\b/i.exec(event.output);
      if (limit) metrics.limits.inc({ kind: limit[1]!.toLowerCase() });
      return;
    }
    case 'check-finished':
      metrics.checks.inc({ phase: event.phase, name: event.name, outcome: event.outcome });
      metrics.checkTime.observe({ phase: event.phase }, event.durationMs / 1000);
      return;
    case 'verification-finished':
      metrics.verdicts.inc({ outcome: event.outcome });
      return;
    case 'egress-blocked':
      metrics.egress.inc({ reason: event.reason });
      return;
    case 'queue-started':
      metrics.queueWait.observe(event.waitedMs / 1000);
      return;
    default:
      return;
  }
}

/** A model turn's tokens and estimated cost, and the turn's time since the run's last step. */
function countUsage(
  metrics: EventMetrics,
  runs: { provider: string; lastStep: Map<string, number> },
  sessionId: string,
  event: Extract<SessionEvent, { type: 'usage' }>,
): void {
  const { provider, lastStep } = runs;
  const usage = {
    inputTokens: event.inputTokens,
    outputTokens: event.outputTokens,
    cacheReadTokens: event.cacheReadTokens,
    cacheWriteTokens: event.cacheWriteTokens,
  };
  for (const [kind, n] of [
    ['input', usage.inputTokens],
    ['output', usage.outputTokens],
    ['cache_read', usage.cacheReadTokens],
    ['cache_write', usage.cacheWriteTokens],
  ] as const) {
    if (n > 0) metrics.tokens.inc({ provider, model: event.model, kind }, n);
  }
  const dollars = eventCostUsd(event);
  if (dollars) metrics.cost.inc({ provider, model: event.model }, dollars);
  const since = lastStep.get(sessionId);
  if (since !== undefined && event.turn > 0) metrics.turns.observe({ model: event.model }, (Date.now() - since) / 1000);
  lastStep.set(sessionId, Date.now());
}
