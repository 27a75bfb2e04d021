import type { IntegrationContext } from '../integrations/integration-module.ts';
import { knowledgeKey } from './harness/knowledge/load-knowledge.ts';
import { createOutcomeStore } from './sessions/outcome-store.ts';
import type { KnowledgeStore } from './harness/knowledge/knowledge-store.ts';
import type { SessionStore } from './sessions/session-store.ts';

/**
 * What the composition root hands every integration: session reads and thread bindings through the
 * session store, lessons through the knowledge store, outcomes through the outcome ledger, and the
 * database for the integration's own tables only.
 */
export function integrationContext(deps: Pick<IntegrationContext, 'inbox' | 'db' | 'log' | 'publicUrl' | 'pageSessions'> & { store: SessionStore; knowledge: Pick<KnowledgeStore, 'addLesson'> }): IntegrationContext {
  const { store, knowledge, ...rest } = deps;
  return {
    ...rest,
    getSession: store.get,
    findSession: store.findByThread,
    addThread: store.addThread,
    sessionThreads: store.threads,
    sessionEvents: (sessionId, types) => store.events(sessionId, { types }),
    addLesson: (repo, text) => knowledge.addLesson(knowledgeKey(repo), text),
    outcomes: createOutcomeStore(deps.db),
  };
}
