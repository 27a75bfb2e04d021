import type { IntegrationDb } from '../../db/schema.ts';

/**
 * Where the next poll of one list starts (polling mode), shared by every process through the
 * database: rows of the delivery sweep's table under their own keys (`poll:issue-comments:o/r`).
 */
export class PollMarks {
  readonly #db: IntegrationDb<'github'>;

  constructor(db: IntegrationDb<'github'>) {
    this.#db = db;
  }

  async get(key: string): Promise<Date | undefined> {
    const row = await this.#db
      .selectFrom('github_delivery_sweep')
      .select('since')
      .where('id', '=', `poll:${key}`)
      .executeTakeFirst();
    return row?.since;
  }

  /** Moves a mark forward only: a slower process never takes another's mark back. */
  async save(key: string, since: Date): Promise<void> {
    await this.#db
      .insertInto('github_delivery_sweep')
      .values({ id: `poll:${key}`, since })
      .onConflict((oc) => oc.column('id').doUpdateSet({ since }).where('github_delivery_sweep.since', '<', since))
      .execute();
  }
}
