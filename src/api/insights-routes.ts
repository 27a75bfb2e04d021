import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.ts';
import { loadSessionFacts } from '../sessions/store/session-facts.ts';
import { groupings, insightsCsv, insightsReport } from './insights-report.ts';
import type { ApiServer } from './server.ts';

const day = 24 * 60 * 60 * 1000;
const Instant = z.union([z.iso.datetime({ offset: true }), z.iso.date()]).transform((s) => new Date(s));

/** `from` defaults to 30 days before `to`, `to` to now; at most a year apart. */
export const InsightsQuery = z
  .object({
    from: Instant.optional(),
    to: Instant.optional(),
    groupBy: z.enum(groupings).default('repo'),
    format: z.enum(['json', 'csv']).default('json'),
  })
  .strict()
  .transform((q) => {
    const to = q.to ?? new Date();
    return { ...q, to, from: q.from ?? new Date(to.getTime() - 30 * day) };
  })
  .refine((q) => q.from < q.to, { message: '`from` must be before `to`' })
  .refine((q) => q.to.getTime() - q.from.getTime() <= 366 * day, { message: 'the period may be at most a year' });

/**
 * `GET /api/insights?from=&to=&groupBy=repo|surface|model|taskClass&format=json|csv`: what the
 * sessions created in the period cost and what became of their pull requests, per group, with the
 * verifier's calibration (docs/insights.md).
 */
export function registerInsightsRoutes(app: ApiServer, deps: { db: Kysely<Database> }): void {
  app.get('/api/insights', async (request, reply) => {
    const parsed = InsightsQuery.safeParse(request.query);
    if (!parsed.success)
      return reply.code(400).send({
        error: 'invalid_input',
        message: parsed.error.issues.map((i) => `${i.path.join('.') || 'query'}: ${i.message}`).join('; '),
        issues: parsed.error.issues,
      });
    const query = parsed.data;
    const report = insightsReport(await loadSessionFacts(deps.db, query), query);
    if (query.format === 'json') return report;
    const name = `patchbay-insights-${query.groupBy}-${report.from.slice(0, 10)}-${report.to.slice(0, 10)}.csv`;
    return reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${name}"`)
      .send(insightsCsv(report));
  });
}
