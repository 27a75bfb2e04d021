import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventBus, type EventBus, type EventNotice } from '../../src/sessions/notify/event-bus.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

const log = pino({ level: 'silent' });

describe('event bus', () => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  let bus: EventBus | undefined;
  let proxy: TcpProxy;

  beforeAll(async () => {
    handle = await createTestDatabase();
    store = createSessionStore(handle.db);
    const target = new URL(handle.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  });
  afterAll(async () => {
    await bus?.close();
    await proxy.close();
    await handle.close();
  });

  it('keeps reconnecting while the database is unreachable, then delivers notices again', {
    timeout: 30_000,
  }, async () => {
    await store.create({
      id: 's-bus',
      repo: 'r',
      prompt: 'p',
      title: 't',
      requester: { source: 'web', id: 'a', name: 'A' },
      thread: { source: 'web' },
    });
    // Only the bus goes through the proxy; the store writes straight to the database.
    bus = await createEventBus({ url: proxy.via(handle.url), log, reconnectMs: 100 });
    const seen: EventNotice[] = [];
    bus.subscribe('s-bus', (notice) => seen.push(notice));

    proxy.cut();
    // Several reconnect attempts fail meanwhile: counted where they arrive, not guessed from a sleep.
    await waitFor(async () => proxy.refused >= 3, 'three refused reconnect attempts', 10_000);
    proxy.restore();

    await waitFor(
      async () => {
        await store.append('s-bus', [{ event: { type: 'error', code: 'x', message: 'ping' } }]);
        return seen.length > 0;
      },
      'a notice after the outage',
      10_000,
    );
    expect(seen[0]).toMatchObject({ sessionId: 's-bus', type: 'error' });
  });
});
