import {
  type Kysely,
  type KyselyPlugin,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  type TableNode,
  type UnknownRow,
} from 'kysely';
import { PatchbayError } from '../src/core/errors.ts';
import type { Database, IntegrationDb, IntegrationTables } from './schema.ts';

/** Every integration by name: its tables are named `<name>_…` (db/integration-tables.ts). */
const integrations = { slack: true, github: true, linear: true } satisfies Record<keyof IntegrationTables, true>;
const integrationTable = new RegExp(`^(${Object.keys(integrations).join('|')})_`);

/**
 * `db` as `integration`'s module gets it: typed with its own tables only (`IntegrationDb`), and
 * refusing at run time too any query that names another integration's table, which a cast could
 * otherwise reach past the types. Transactions begun on the handle carry the guard as well.
 */
export function ownTablesOnly<Integration extends keyof IntegrationTables>(
  db: Kysely<Pick<Database, IntegrationTables[keyof IntegrationTables]>>,
  integration: Integration,
): IntegrationDb<Integration> {
  // For each integration by name the wider handle is assignable to the narrower one (the test
  // assigns them); for a generic `Integration` the compiler cannot tell, hence the cast.
  return db.withPlugin(new OwnTablesOnly(integration)) as unknown as IntegrationDb<Integration>;
}

/**
 * A Kysely plugin that refuses, before it is sent, a query naming a table of another integration
 * than `integration` (`slack_*`, `github_*`, `linear_*`), wherever the name sits: FROM, a join, a
 * subquery, a CTE, INSERT INTO, UPDATE, DELETE FROM, `sql.table(…)`. Its own tables and the shared
 * ones pass (the types keep the sessions' tables out of an integration's handle).
 *
 * Raw SQL text (`sql\`select … from slack_posts\``) is not inspected: its fragments are strings
 * that only PostgreSQL parses, so a table named in them cannot be told reliably from a column, a
 * string literal or a comment. Nor is a `CompiledQuery` handed to `executeQuery`, which skips the
 * plugins. Integration code writes queries with the builder; review keeps raw table names out.
 */
export class OwnTablesOnly implements KyselyPlugin {
  readonly #integration: keyof IntegrationTables;

  constructor(integration: keyof IntegrationTables) {
    this.#integration = integration;
  }

  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    for (const table of tablesNamedIn(node)) {
      const owner = integrationTable.exec(table)?.[1];
      if (owner !== undefined && owner !== this.#integration)
        throw new PatchbayError(
          'internal',
          `The ${this.#integration} integration's database handle refused a query on ${table}: ` +
            `an integration reaches its own tables (${this.#integration}_*) and never another's`,
        );
    }
    return node;
  }

  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}

/** The table names a query's tree holds, at any depth (Kysely's transformer visits every node kind). */
function tablesNamedIn(node: RootOperationNode): Set<string> {
  const walk = new TableNames();
  walk.transformNode(node);
  return walk.names;
}

class TableNames extends OperationNodeTransformer {
  readonly names = new Set<string>();

  protected override transformTable(node: TableNode, queryId?: QueryId): TableNode {
    this.names.add(node.table.identifier.name);
    return super.transformTable(node, queryId);
  }
}
