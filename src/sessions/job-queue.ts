import type { PgBoss } from 'pg-boss';
import type { z } from 'zod';

/**
 * A pg-boss queue by its name and the shape of its jobs' data. Every queue Patchbay uses is one of
 * these constants, so a reader finds the queue, its payload and (in the module that defines it) its
 * handler with go-to-definition instead of by a string.
 */
export type QueueDefinition<Payload> = {
  readonly name: string;
  /** Parses a job's data as it comes back from the database. */
  parse(data: unknown): Payload;
};

export function defineQueue<Schema extends z.ZodType>(name: string, schema: Schema): QueueDefinition<z.infer<Schema>> {
  return { name, parse: (data) => schema.parse(data) };
}

type QueueOptions = NonNullable<Parameters<PgBoss['createQueue']>[1]>;

/**
 * Creates the queue with these options, or updates them when it exists. Another process may create
 * it at the same moment: theirs is as good as ours.
 */
export async function ensureQueue(boss: PgBoss, queue: QueueDefinition<unknown>, options: QueueOptions): Promise<void> {
  if (await boss.getQueue(queue.name)) {
    const { policy: _fixedAtCreation, ...settings } = options;
    if (Object.keys(settings).length > 0) await boss.updateQueue(queue.name, settings);
    return;
  }
  await boss.createQueue(queue.name, options).catch(async (error: unknown) => {
    if (!(await boss.getQueue(queue.name))) throw error;
  });
}
