import pino from 'pino';
import type { DeliveryInterpreter } from '../../src/core/delivery-interpreter.ts';
import {
  createInboundPipeline,
  type InboundPipeline,
  type RetryPolicy,
} from '../../src/sessions/inbound/inbound-pipeline.ts';
import { createRunQueue } from '../../src/sessions/worker/run-queue.ts';
import { createTestDatabase } from './test-database.ts';

/** The inbound pipeline alone on a fresh test database and a real pg-boss, working `surface`'s deliveries. */
export async function startTestPipeline(
  surface: DeliveryInterpreter,
  options: { pollingIntervalSeconds: number; retry?: RetryPolicy },
): Promise<{ pipeline: InboundPipeline; dispose(): Promise<void> }> {
  const database = await createTestDatabase();
  const log = pino({ level: 'silent' });
  const queue = await createRunQueue({
    url: database.url,
    log,
    pollingIntervalSeconds: options.pollingIntervalSeconds,
  });
  const pipeline = createInboundPipeline({
    db: database.db,
    boss: queue.boss,
    service: { handle: async () => ({ kind: 'no-session' }) },
    log,
    pollingIntervalSeconds: options.pollingIntervalSeconds,
    ...(options.retry && { retry: options.retry }),
  });
  await pipeline.start([surface]);
  return {
    pipeline,
    async dispose() {
      await pipeline.stop();
      await queue.stop();
      await database.close();
    },
  };
}
