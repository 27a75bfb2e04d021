import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { createDefaultTools } from '../agent/default-tools.ts';
import { createToolRegistry, type ToolRegistry } from '../agent/tool-registry.ts';
import { createPgArtifactStore } from './pg-artifact-store.ts';

/** The agent's tools as a worker runs them: the default set, keeping the pictures they take in the database. */
export function createAgentTools(db: Kysely<Database>): ToolRegistry {
  return createToolRegistry(createDefaultTools(), { artifacts: createPgArtifactStore(db) });
}
