import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/events.ts';
import type { ApiServer } from '../../src/api/server.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';
import { eventFrames, readSse, seqs } from './sse-client.ts';

const say = (text: string, turn = 0) => ({ event: { type: 'assistant-message' as const, text, turn } });

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('session event stream', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let base: string;

  beforeAll(async () => {
    fx = await createApiFixture();
    // The production keep-alive (15 s), which also re-reads the log: events that arrive within a
    // test's time arrive through the live path (NOTIFY → bus → stream), not through a re-read.
    app = fx.server();
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => fx.close());

  const start = async (prompt: string) => {
    const res = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ repo: 'https://github.com/o/r', prompt }),
    });
    return ((await res.json()) as { id: string }).id;
  };

  it('replays the log, then streams an event appended while connected', async () => {
    const id = await start('stream me');
    const { status, headers, frames } = await readSse(`${base}/api/sessions/${id}/events`, {
      // A later event marks the end: anything sent twice would arrive before it.
      until: (f) => seqs(f).includes(4),
      onOpen: async () => {
        await until(() => fx.subscriptions() > 0, 'the stream to subscribe');
        await fx.store.append(id, [say('live hello')]);
        await fx.store.append(id, [say('end mark', 1)]);
      },
    });
    expect(status).toBe(200);
    expect(headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = eventFrames(frames);
    // Unnamed frames, the type in the data: a frame named after a stored `error` event would fire
    // the browser's EventSource onerror on this healthy stream.
    expect(events.map((f) => [f.id, f.event, (JSON.parse(f.data!) as StoredEvent).event.type])).toEqual([
      ['1', undefined, 'session-created'],
      ['2', undefined, 'user-message'],
      ['3', undefined, 'assistant-message'],
      ['4', undefined, 'assistant-message'],
    ]);
    const live = JSON.parse(events[2]!.data!) as StoredEvent;
    expect(live).toMatchObject({ sessionId: id, seq: 3, event: { type: 'assistant-message', text: 'live hello' } });
    await until(() => fx.subscriptions() === 0, 'the subscription to be released after disconnect');
  });

  it('resumes after Last-Event-ID without gaps or duplicates', async () => {
    const id = await start('resume me');
    const first = await readSse(`${base}/api/sessions/${id}/events`, { until: (f) => seqs(f).includes(2) });
    expect(seqs(first.frames)).toEqual([1, 2]);

    // Written while no client is connected, in separate transactions and in one batch.
    await fx.store.append(id, [say('a')]);
    await fx.store.append(id, [say('b', 1), say('c', 2)]);

    const second = await readSse(`${base}/api/sessions/${id}/events`, {
      headers: { 'last-event-id': '2' },
      until: (f) => seqs(f).includes(9),
      onOpen: async () => {
        await until(() => fx.subscriptions() > 0, 'the stream to subscribe');
        // A burst of concurrent writers while the backlog is being sent, then an end mark.
        await Promise.all([
          fx.store.append(id, [say('d', 3)]),
          fx.store.append(id, [say('e', 4)]),
          fx.store.append(id, [say('f', 5)]),
        ]);
        await fx.store.append(id, [say('end mark', 6)]);
      },
    });
    expect(seqs(second.frames)).toEqual([3, 4, 5, 6, 7, 8, 9]);
  });

  it('lets ?after= pick the starting point, with Last-Event-ID taking precedence', async () => {
    const id = await start('after');
    await fx.store.append(id, [say('x'), say('y', 1)]);
    const fromQuery = await readSse(`${base}/api/sessions/${id}/events?after=3`, { until: (f) => seqs(f).includes(4) });
    expect(seqs(fromQuery.frames)).toEqual([4]);
    const fromHeader = await readSse(`${base}/api/sessions/${id}/events?after=1`, {
      headers: { 'last-event-id': '2' },
      until: (f) => seqs(f).includes(4),
    });
    expect(seqs(fromHeader.frames)).toEqual([3, 4]);
  });

  it('sends keep-alive comments on an idle stream', async () => {
    const quick = fx.server({ keepAliveMs: 100 });
    const url = await quick.listen({ host: '127.0.0.1', port: 0 });
    const id = await start('idle');
    const { frames } = await readSse(`${url}/api/sessions/${id}/events`, {
      until: (f) => f.some((x) => x.comment === 'keep-alive'),
    });
    expect(seqs(frames)).toEqual([1, 2]);
  });

  it('answers 404 JSON for an unknown session and 400 for a bad Last-Event-ID', async () => {
    const missing = await fetch(`${base}/api/sessions/nope/events`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'not_found' });
    const id = await start('bad header');
    const bad = await fetch(`${base}/api/sessions/${id}/events`, { headers: { 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
  });

  it('ends open streams when the server closes', async () => {
    const other = fx.server({ keepAliveMs: 60_000 });
    const url = await other.listen({ host: '127.0.0.1', port: 0 });
    const id = await start('closing');
    const res = await fetch(`${url}/api/sessions/${id}/events`);
    const reader = res.body!.getReader();
    await reader.read();
    await other.close();
    let done = false;
    while (!done) done = (await reader.read()).done;
    expect(done).toBe(true);
  });
});
