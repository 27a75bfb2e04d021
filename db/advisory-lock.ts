import pg from 'pg';
import type { Logger } from 'pino';

export type HeldLock = { release(): Promise<void> };

/**
 * Takes the first free of `keys` as a session-level advisory lock (`classId`, key) on a connection
 * of its own, held until `release()`. PostgreSQL gives it back the moment that connection closes,
 * so a process that dies (SIGKILL, a lost host) frees its locks with no lease to expire. A string
 * key is hashed by PostgreSQL (`hashtext`). Undefined when every key is held by someone.
 */
export async function tryAdvisoryLock(input: {
  url: string;
  classId: number;
  keys: readonly (number | string)[];
  log: Logger;
  what: string;
}): Promise<HeldLock | undefined> {
  const client = new pg.Client({ connectionString: input.url });
  // A dropped connection loses the lock; its holder carries on and the lock is free for others.
  client.on('error', (error) => input.log.warn({ err: error }, `${input.what}: lock connection lost`));
  await client.connect();
  try {
    for (const key of input.keys) {
      const keySql = typeof key === 'number' ? '$2::int' : 'hashtext($2)';
      const { rows } = await client.query<{ locked: boolean }>(`select pg_try_advisory_lock($1, ${keySql}) as locked`, [
        input.classId,
        key,
      ]);
      if (!rows[0]?.locked) continue;
      return {
        async release() {
          await client.query(`select pg_advisory_unlock($1, ${keySql})`, [input.classId, key]).catch(() => undefined);
          await client.end().catch(() => undefined);
        },
      };
    }
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  await client.end().catch(() => undefined);
  return undefined;
}
