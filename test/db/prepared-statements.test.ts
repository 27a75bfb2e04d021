import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from '../../db/prepared-statements.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * Statements marked by prepared() are planned once per connection, as named statements of that
 * connection (pg_prepared_statements lists them); every other statement stays unnamed.
 */
describe('prepared statements', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  }, 60_000);
  afterAll(() => database?.close());

  it('runs a marked statement as a named one on its connection, and others unnamed', async () => {
    const marked = prepared('test-double', 'select $1::int * 2 as n');
    const named = await database.db.connection().execute(async (connection) => {
      const results: number[] = [];
      for (const n of [1, 2, 3]) {
        const { rows } = await connection.executeQuery<{ n: number }>(CompiledQuery.raw(marked, [n]));
        results.push(rows[0]!.n);
      }
      await connection.executeQuery(CompiledQuery.raw('select $1::int as plain', [1]));
      const { rows } = await connection.executeQuery<{ name: string; statement: string }>(
        CompiledQuery.raw('select name, statement from pg_prepared_statements order by name'),
      );
      return { results, prepared: rows };
    });
    expect(named.results).toEqual([2, 4, 6]);
    expect(named.prepared).toEqual([{ name: 'test-double', statement: marked }]);
  });

  it('refuses a name that could not be told apart from the statement', () => {
    expect(() => prepared('two words', 'select 1')).toThrow(/not a statement name/);
  });
});
