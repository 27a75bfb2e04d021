import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { StoredEvent } from '../core/events.ts';
import type { Inbound, InboundOutcome } from '../core/inbound.ts';
import type { SessionStatus } from '../core/session-status.ts';
import type { RunQueue } from '../sessions/worker/run-queue.ts';
import type { StoreObserver } from '../api/observed-store.ts';

export type RunTracer = StoreObserver & {
  /**
   * Wraps the session service's `handle`, which every webhook delivery goes through: a span per
   * inbound command, the parent of the run it queues when that run starts in this process.
   */
  traceInbound<R extends InboundOutcome>(handle: (inbound: Inbound) => Promise<R>): (inbound: Inbound) => Promise<R>;
  /**
   * The run queue with the trace context carried in its jobs: a run enqueued under a span (an
   * inbound command) stores its `traceparent`, and the run of that job, in any process, is that
   * span's child.
   */
  traceQueue<Q extends RunQueue>(queue: Q): Q;
  shutdown(): Promise<void>;
};

/** The queue as it is without traces (nothing added per job), else with the trace context in its jobs. */
export function traceRunQueue<Q extends RunQueue>(queue: Q, tracer: RunTracer | undefined): Q {
  return tracer ? tracer.traceQueue(queue) : queue;
}

/**
 * `queue` with the active span's `traceparent` stored in each job it enqueues, and each job it
 * works run under the context its job carries, recorded in `origins` for the run span to start from.
 */
function carryTraceContext<Q extends RunQueue>(queue: Q, origins: Map<string, Context>): Q {
  return {
    ...queue,
    enqueue: (sessionId, options) =>
      queue.enqueue(sessionId, { traceparent: options?.traceparent ?? activeTraceparent() }),
    work: (handler, options) =>
      queue.work(async (job, signal) => {
        const origin = job.traceparent
          ? propagation.extract(ROOT_CONTEXT, { traceparent: job.traceparent })
          : undefined;
        if (!origin) return handler(job, signal);
        origins.set(job.sessionId, origin);
        try {
          // Active while it runs, so a run put back in the queue (at shutdown) keeps its trace.
          return await context.with(origin, () => handler(job, signal));
        } finally {
          origins.delete(job.sessionId);
        }
      }, options),
  };
}

/** The W3C `traceparent` of the active span, if there is one. */
function activeTraceparent(): string | undefined {
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

type OpenRun = { span: Span; ctx: Context; lastStep: number };
type Tracer = ReturnType<typeof trace.getTracer>;
/** The runs open in this process, and the trace context of the job being run for a session (its delivery's span). */
type TracedRuns = { tracer: Tracer; runs: Map<string, OpenRun>; origins: Map<string, Context> };

/**
 * OpenTelemetry traces of session runs (OTEL_EXPORTER_OTLP_ENDPOINT, OTLP over HTTP): one trace per
 * inbound command (a delivery) and the run it queues, in whichever process takes the run's job (the
 * job carries the trace context), else one per run; `session.run` from the start to where it ended, with a child
 * span per model turn, tool call, check, verdict and push, each at the times the event log records
 * and each with `patchbay.session_id`. Built from the events the run writes, so no layer below the
 * composition root knows of tracing. The SDK is loaded only when an endpoint is set.
 */
export async function startRunTracer(options: {
  endpoint: string;
  log: Logger;
  serviceName?: string;
}): Promise<RunTracer> {
  const [{ NodeSDK }, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  const sdk = new NodeSDK({
    serviceName: options.serviceName ?? 'patchbay',
    traceExporter: new OTLPTraceExporter({ url: `${options.endpoint}/v1/traces` }),
    instrumentations: [],
    resourceDetectors: [],
  });
  sdk.start();
  const traced: TracedRuns = { tracer: trace.getTracer('patchbay'), runs: new Map(), origins: new Map() };
  options.log.info({ endpoint: options.endpoint }, 'OpenTelemetry traces are exported');
  return {
    onEvents: (events) => {
      for (const stored of events) traceStep(traced, stored);
    },
    onStatus: (sessionId, from, to) => traceRunStatus(traced, sessionId, from, to),
    traceInbound: (handle) => traceInboundWith(traced.tracer, handle),
    traceQueue: (queue) => carryTraceContext(queue, traced.origins),
    async shutdown() {
      for (const run of traced.runs.values()) run.span.end();
      traced.runs.clear();
      await sdk
        .shutdown()
        .catch((error: unknown) => options.log.warn({ err: error }, 'could not flush the last traces'));
    },
  };
}

/** A run starts its `session.run` span (under its delivery's, when the job carried one); leaving running ends it. */
function traceRunStatus(traced: TracedRuns, sessionId: string, from: SessionStatus, to: SessionStatus): void {
  const { tracer, runs } = traced;
  const now = Date.now();
  if (to === 'running') {
    const parent = traced.origins.get(sessionId) ?? context.active();
    const span = tracer.startSpan(
      'session.run',
      { startTime: now, attributes: { 'patchbay.session_id': sessionId, 'patchbay.resumed_from': from } },
      parent,
    );
    runs.set(sessionId, { span, ctx: trace.setSpan(parent, span), lastStep: now });
    return;
  }
  const run = runs.get(sessionId);
  if (!run || from !== 'running') return;
  run.span.setAttribute('patchbay.outcome', to);
  if (to === 'failed') run.span.setStatus({ code: SpanStatusCode.ERROR });
  run.span.end(now);
  runs.delete(sessionId);
}

/** A span per inbound command, active while it is handled so the run it enqueues carries it (traceQueue). */
function traceInboundWith<R extends InboundOutcome>(
  tracer: Tracer,
  handle: (inbound: Inbound) => Promise<R>,
): (inbound: Inbound) => Promise<R> {
  return async (inbound) => {
    const span = tracer.startSpan(`inbound ${inbound.kind}`, {
      attributes: {
        'patchbay.surface': inbound.thread.source,
        ...('dedupeKey' in inbound && inbound.dedupeKey && { 'patchbay.dedupe_key': inbound.dedupeKey }),
      },
    });
    try {
      const outcome = await context.with(trace.setSpan(context.active(), span), () => handle(inbound));
      span.setAttribute('patchbay.outcome', outcome.kind);
      if ('session' in outcome) span.setAttribute('patchbay.session_id', outcome.session.id);
      return outcome;
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  };
}

/** A step of an open run as a child span of its `session.run`, at the times the event log records. */
function traceStep(traced: TracedRuns, stored: StoredEvent): void {
  const run = traced.runs.get(stored.sessionId);
  if (!run) return;
  const at = Date.parse(stored.at);
  const { event } = stored;
  const session = { 'patchbay.session_id': stored.sessionId };
  const child = (name: string, start: number, attributes: Attributes, failed = false) => {
    const span = traced.tracer.startSpan(name, { startTime: start, attributes }, run.ctx);
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end(Math.max(start, at));
  };
  switch (event.type) {
    case 'usage':
      child('model.turn', run.lastStep, {
        ...session,
        'patchbay.turn': event.turn,
        'gen_ai.request.model': event.model,
        'gen_ai.usage.input_tokens': event.inputTokens,
        'gen_ai.usage.output_tokens': event.outputTokens,
      });
      break;
    case 'tool-end':
      child(`tool ${event.name}`, at - event.durationMs, { ...session, 'patchbay.tool': event.name }, event.isError);
      break;
    case 'check-finished':
      child(
        `check ${event.name}`,
        at - event.durationMs,
        {
          ...session,
          'patchbay.check.phase': event.phase,
          'patchbay.check.outcome': event.outcome,
          'patchbay.commit': event.commit,
        },
        event.outcome !== 'passed',
      );
      break;
    case 'verification-finished':
      child(
        'verify',
        run.lastStep,
        { ...session, 'patchbay.verdict': event.outcome, 'patchbay.commit': event.commit },
        event.outcome !== 'passed',
      );
      break;
    case 'branch-pushed':
      child('git.push', run.lastStep, { ...session, 'patchbay.branch': event.branch, 'patchbay.commit': event.commit });
      break;
    default:
      return;
  }
  run.lastStep = at;
}
