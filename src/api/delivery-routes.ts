import { z } from 'zod';
import type { InboundPipeline } from '../sessions/inbound/inbound-pipeline.ts';
import type { ApiServer } from './server.ts';

const Query = z.object({
  failed: z.enum(['true', 'false']).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

/**
 * GET /api/deliveries: the webhooks and events the inbound pipeline stored, newest first, with
 * their status and outcome; `?failed=true` lists those that failed on their last attempt (their
 * thread was told why), kept for inspection.
 */
export function registerDeliveryRoutes(app: ApiServer, deliveries: Pick<InboundPipeline, 'list'>): void {
  app.get('/api/deliveries', async (request) => {
    const query = Query.parse(request.query);
    return deliveries.list({ failed: query.failed === 'true', ...(query.limit && { limit: query.limit }) });
  });
}
