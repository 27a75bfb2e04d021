import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import pg from 'pg';

/**
 * Statements run once per delivery or more (the inbound pipeline's) are planned once per
 * connection instead of on every call: PostgreSQL spends more CPU planning a statement of a few
 * joins over a table with several indexes than running it. Such a statement names itself with a
 * leading comment (see prepared()); the pool Kysely is given runs those as named statements.
 * Only statements of a fixed text may be named (each name is kept per connection for its life).
 */
const marker = /^\/\* prepared ([a-z0-9-]+) \*\//;

/**
 * `text`, marked to be run as the prepared statement `name`. Its result columns must be listed,
 * not `*`: a statement prepared before a column was added would otherwise fail on its next run.
 */
export function prepared(name: string, text: string): string {
  if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`not a statement name: ${name}`);
  return `/* prepared ${name} */ ${text}`;
}

/** The pg client Kysely is handed: marked statements go as named ones, everything else as it came. */
class PreparingClient implements PostgresPoolClient {
  // processID is pg's, undocumented: Kysely reads it to cancel a statement instead of asking the server.
  readonly #client: pg.PoolClient & { processID?: number };

  constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  /** 0 when pg does not say: Kysely then asks the server. */
  get processID(): number {
    return this.#client.processID ?? 0;
  }

  query<R>(sql: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sql: string | PostgresCursor<R>,
    parameters: readonly unknown[] = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Kysely streams only with a cursor class in its dialect config, which this pool's dialect has not.
    if (typeof sql !== 'string') throw new Error('streaming queries are not configured');
    return this.#run<R>(sql, [...parameters]);
  }

  async #run<R>(text: string, values: unknown[]): Promise<PostgresQueryResult<R>> {
    const name = marker.exec(text)?.[1];
    const result = await this.#client.query<R & pg.QueryResultRow>(name ? { name, text, values } : { text, values });
    // What Kysely reads of a result; pg types the command as any string.
    return {
      command: result.command as PostgresQueryResult<R>['command'],
      rowCount: result.rowCount ?? 0,
      rows: result.rows,
    };
  }

  release(destroy?: boolean): void {
    this.#client.release(destroy);
  }
}

/** `pool` for Kysely's PostgresDialect, running statements marked by prepared() as named statements. */
export function preparingPool(pool: pg.Pool): PostgresPool {
  // One wrapper per connection: Kysely keeps its connection state by client object.
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = new PreparingClient(client);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
    // For Kysely's cancel: a connection of its own, made like the pool's.
    options: pool.options,
    Client: pg.Client,
  };
}
