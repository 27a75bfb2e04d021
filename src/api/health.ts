import Fastify from 'fastify';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.ts';
import { throttleLog } from '../core/log-throttle.ts';
import type { Metrics } from './metrics.ts';

/**
 * The answer to a health probe: `{ok: true}` when the database answers, else a 503. Probes ask every
 * few seconds: while the database is away, the warning is said once per window, not per probe.
 */
export function databaseHealth(db: Db, log: Logger) {
  const failed = throttleLog((fields, message) => log.warn(fields, message));
  return async (): Promise<{ status: 200 | 503; body: { ok: boolean; error?: string } }> => {
    try {
      await sql`select 1`.execute(db);
      return { status: 200, body: { ok: true } };
    } catch (error) {
      failed({ err: error }, 'health check failed');
      return { status: 503, body: { ok: false, error: 'database_unavailable' } };
    }
  };
}

/**
 * `GET /healthz` for a `patchbay worker`, which serves no API: for a container's health check or an
 * orchestrator's probe (WORKER_HEALTH_PORT). On every interface, as probes come from outside the
 * container; it tells nothing but whether the worker is up and reaches its database.
 */
export async function startWorkerHealth(options: {
  port: number;
  db: Db;
  log: Logger;
  metrics?: Pick<Metrics, 'render' | 'contentType'>;
}): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ loggerInstance: options.log, disableRequestLogging: true });
  const health = databaseHealth(options.db, options.log);
  app.get('/healthz', async (_request, reply) => {
    const { status, body } = await health();
    return reply.code(status).send(body);
  });
  const metrics = options.metrics;
  // The worker's own counters (its runs, turns, tool calls, checks), for Prometheus to scrape.
  if (metrics)
    app.get('/metrics', async (_request, reply) =>
      reply.header('content-type', metrics.contentType).send(await metrics.render()),
    );
  await app.listen({ port: options.port, host: '0.0.0.0' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}
