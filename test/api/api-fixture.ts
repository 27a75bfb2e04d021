import pino from 'pino';
import type { Db } from '../../db/database.ts';
import { createServer, type ApiServer, type ServerDeps } from '../../src/api/server.ts';
import { createEventBus, type EventBus } from '../../src/sessions/notify/event-bus.ts';
import { createRunQueue, type RunQueue } from '../../src/sessions/worker/run-queue.ts';
import { createSessionService, type SessionService } from '../../src/sessions/inbound/session-service.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { createKnowledgeStore } from '../../src/sessions/harness-stores/pg-knowledge-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

export type ApiFixture = {
  store: SessionStore;
  /** The database under the store, for the routes that read across sessions and for breaking it. */
  db: Db;
  service: SessionService;
  bus: EventBus;
  queue: RunQueue;
  /** Live event-stream subscriptions on the bus, to see that disconnects clean up. */
  subscriptions(): number;
  server(options?: {
    apiToken?: string;
    publicUrl?: string;
    keepAliveMs?: number;
    metrics?: NonNullable<ServerDeps['metrics']>;
    artifacts?: NonNullable<ServerDeps['artifacts']>;
    imageIntake?: NonNullable<ServerDeps['imageIntake']>;
  }): ApiServer;
  close(): Promise<void>;
};

/**
 * The real pieces the API sits on: a fresh PostgreSQL database, the session store, a pg-boss run
 * queue (no worker, so runs stay queued) and the LISTEN/NOTIFY event bus.
 */
export async function createApiFixture(): Promise<ApiFixture> {
  const log = pino({ level: 'silent' });
  const handle = await createTestDatabase();
  const store = createSessionStore(handle.db);
  const queue = await createRunQueue({ url: handle.url, log });
  const realBus = await createEventBus({ url: handle.url, log });
  let live = 0;
  const bus: EventBus = {
    subscribe(sessionId, listener) {
      live++;
      const unsubscribe = realBus.subscribe(sessionId, listener);
      let done = false;
      return () => {
        if (!done) live--;
        done = true;
        unsubscribe();
      };
    },
    subscribeLive: (sessionId, listener) => realBus.subscribeLive(sessionId, listener),
    publishLive: (sessionId, event) => realBus.publishLive(sessionId, event),
    close: () => realBus.close(),
  };
  const service = createSessionService({
    store,
    queue,
    log,
    artifacts: createPgArtifactStore(handle.db),
    egress: { knowledge: createKnowledgeStore(handle.db) },
  });
  const servers: ApiServer[] = [];
  return {
    store,
    db: handle.db,
    service,
    bus,
    queue,
    subscriptions: () => live,
    server(options = {}) {
      const app = createServer({ service, store, db: handle.db, bus, log, ...options });
      servers.push(app);
      return app;
    },
    async close() {
      for (const app of servers) await app.close();
      await realBus.close();
      await queue.stop();
      await handle.close();
    },
  };
}
