import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import type { LiveEvent } from '../../src/core/live-events.ts';
import { createLiveText } from '../../src/harness/live-text.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';
import { readSse, type SseFrame } from './sse-client.ts';

describe('streamed assistant text', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let base: string;

  beforeAll(async () => {
    fx = await createApiFixture();
    app = fx.server({ keepAliveMs: 200 });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => fx.close());

  it('coalesces token deltas into a few events that say where they start in the turn', async () => {
    const published: LiveEvent[] = [];
    const live = createLiveText('s1', { publishLive: (_id, event) => published.push(event) }, 20);
    for (const piece of ['Hel', 'lo ', 'wor', 'ld']) live.onDelta(piece, 0);
    await new Promise((r) => setTimeout(r, 60));
    live.onDelta('Next', 1);
    live.onDelta(' turn', 1);
    live.flush();
    expect(published).toEqual([
      { type: 'assistant-delta', turn: 0, offset: 0, text: 'Hello world' },
      { type: 'assistant-delta', turn: 1, offset: 0, text: 'Next turn' },
    ]);
  });

  it('reaches the session stream through the database as frames without an id, and never into the log', async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'a', name: 'A' },
      text: 'live',
      repo: 'https://github.com/o/r',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const long = 'x'.repeat(2500);
    const isLive = (f: SseFrame) => f.event === 'live';
    const { frames } = await readSse(`${base}/api/sessions/${id}/events`, {
      until: (f) => f.filter(isLive).length >= 4,
      onOpen: async () => {
        // The subscription is made as the stream opens; keep publishing until the frames come.
        for (let i = 0; i < 20 && fx.subscriptions() === 0; i++) await new Promise((r) => setTimeout(r, 50));
        fx.bus.publishLive(id, { type: 'assistant-delta', turn: 0, offset: 0, text: 'Thinking…' });
        fx.bus.publishLive('another-session', {
          type: 'assistant-delta',
          turn: 0,
          offset: 0,
          text: 'not for this stream',
        });
        // Past NOTIFY's 8000-byte payload limit: split into chunks that keep their offsets.
        fx.bus.publishLive(id, { type: 'assistant-delta', turn: 0, offset: 9, text: long });
      },
    });
    const live = frames.filter(isLive);
    expect(live.every((f) => f.id === undefined)).toBe(true);
    const events = live.map((f) => JSON.parse(f.data!) as LiveEvent);
    expect(events.map((e) => [e.offset, e.text.length])).toEqual([
      [0, 9],
      [9, 1000],
      [1009, 1000],
      [2009, 500],
    ]);
    expect(events.map((e) => e.text).join('')).toBe(`Thinking…${long}`);
    expect((await fx.store.events(id)).map((e) => e.event.type)).toEqual(['session-created', 'user-message']);
  });
});
