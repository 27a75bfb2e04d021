import type { PgBoss } from 'pg-boss';
import type { z } from 'zod';

/**
 * A pg-boss queue by its name, the shape of its jobs' data and the handler that works its jobs.
 * Every queue Patchbay uses is one of these constants, defined beside its handler: from the line
 * that sends a job, go-to-definition on the queue lands on the definition, and from there on the
 * function that works the job. pg-boss carries the job in between (a row of its table), so the
 * process that works it may be another one; the process that works the queue calls `handler`.
 */
export type QueueDefinition<Payload, Handler = unknown> = {
  readonly name: string;
  /** Parses a job's data as it comes back from the database. */
  parse(data: unknown): Payload;
  /** What works this queue's jobs (its first parameter is the state of the one that works them). */
  readonly handler: Handler;
};

export function defineQueue<Schema extends z.ZodType, Handler>(
  name: string,
  schema: Schema,
  handler: Handler,
): QueueDefinition<z.infer<Schema>, Handler> {
  return { name, parse: (data) => schema.parse(data), handler };
}

type QueueOptions = NonNullable<Parameters<PgBoss['createQueue']>[1]>;

/**
 * Creates the queue with these options, or updates them when it exists. Another process may create
 * it at the same moment: theirs is as good as ours.
 */
export async function ensureQueue(
  boss: PgBoss,
  queue: Pick<QueueDefinition<unknown>, 'name'>,
  options: QueueOptions,
): Promise<void> {
  if (await boss.getQueue(queue.name)) {
    const { policy: _fixedAtCreation, ...settings } = options;
    if (Object.keys(settings).length > 0) await boss.updateQueue(queue.name, settings);
    return;
  }
  await boss.createQueue(queue.name, options).catch(async (error: unknown) => {
    if (!(await boss.getQueue(queue.name))) throw error;
  });
}
