import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventPage } from '../../src/api/api-types.ts';
import type { ApiServer } from '../../src/api/server.ts';
import type { NewEvent } from '../../src/core/run-log.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

/**
 * `GET /api/sessions/:id/events?before=&limit=`: the newest page first and a cursor for the page
 * before it, over the real server, store and PostgreSQL. The unpaged reads keep their own tests
 * (api-routes, event-stream).
 */
describe('paged event reads', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let id: string;
  const token = 'pb_test_token_paged';
  const auth = { authorization: `Bearer ${token}` };

  beforeAll(async () => {
    fx = await createApiFixture();
    app = fx.server({ apiToken: token });
    const created = await app.inject({
      method: 'POST',
      url: '/api/sessions',
      headers: auth,
      payload: { repo: 'https://github.com/o/r', prompt: 'a long one' },
    });
    id = created.json().id;
    // 2 events from the start, then 248 more: 250, every tenth a check.
    const events: NewEvent[] = [];
    for (let i = 0; i < 248; i++) {
      events.push(
        i % 10 === 0
          ? {
              event: {
                type: 'check-finished',
                phase: 'check',
                name: `c${i}`,
                command: 'npm test',
                outcome: 'passed',
                exitCode: 0,
                durationMs: 1,
                commit: 'a'.repeat(40),
                logHead: '',
                logTail: '',
              },
            }
          : { event: { type: 'assistant-message', turn: i, text: `turn ${i}` } },
      );
    }
    await fx.store.append(id, events);
  });
  afterAll(() => fx.close());

  const page = async (query: string) => {
    const res = await app.inject({ url: `/api/sessions/${id}/events?${query}`, headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as EventPage;
  };
  const seqs = (p: EventPage) => p.events.map((e) => e.seq);

  it('answers the newest page first, oldest event first within it, with the cursor of the page before', async () => {
    const newest = await page('limit=20');
    expect(seqs(newest)).toEqual(Array.from({ length: 20 }, (_, i) => 231 + i));
    expect(newest.nextBefore).toBe(231);
    expect(newest.events.at(-1)?.event).toMatchObject({ type: 'assistant-message', text: 'turn 247' });
  });

  it('walks back to the first event with no gap and no repeat, and ends with a null cursor', async () => {
    const seen: number[] = [];
    let cursor: number | null = null;
    let pages = 0;
    do {
      const p: EventPage = await page(`limit=64${cursor ? `&before=${cursor}` : ''}`);
      seen.unshift(...seqs(p));
      cursor = p.nextBefore;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(4);
    expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
  });

  it('reads the page before any seq, a short last page, and an empty one before the first event', async () => {
    expect(seqs(await page('before=11&limit=3'))).toEqual([8, 9, 10]);
    const last = await page('before=4&limit=10');
    expect(seqs(last)).toEqual([1, 2, 3]);
    expect(last.nextBefore).toBeNull();
    expect(await page('before=1&limit=5')).toEqual({ events: [], nextBefore: null });
    // A page exactly as long as what is left has no page before it.
    expect((await page('before=4&limit=3')).nextBefore).toBeNull();
  });

  it('defaults to 100 events and pages through one type', async () => {
    expect(seqs(await page('before=251'))).toHaveLength(100);
    const checks = await page('types=check-finished&limit=10');
    expect(checks.events.map((e) => e.event.type)).toEqual(Array(10).fill('check-finished'));
    expect(checks.nextBefore).toBe(checks.events[0]!.seq);
    const rest = await page(`types=check-finished,session-created&limit=100&before=${checks.nextBefore}`);
    expect(rest.events.map((e) => e.event.type)).toEqual(['session-created', ...Array(15).fill('check-finished')]);
    expect(rest.nextBefore).toBeNull();
  });

  it('refuses a bad cursor, limit or type with a 400 that says what is wrong', async () => {
    const refused = async (query: string, message: RegExp) => {
      const res = await app.inject({ url: `/api/sessions/${id}/events?${query}`, headers: auth });
      expect(res.statusCode, query).toBe(400);
      expect(res.json(), query).toMatchObject({ error: 'invalid_input', message: expect.stringMatching(message) });
    };
    await refused('limit=0', /^limit: limit must be 1 or more$/);
    await refused('limit=1001', /^limit: limit must be at most 1000$/);
    await refused('limit=ten', /^limit: limit must be a number$/);
    await refused('limit=2.5', /^limit: limit must be a whole number$/);
    await refused('before=0', /^before: before must be 1 or more$/);
    await refused('before=-3&limit=5', /before must be 1 or more/);
    await refused('before=x', /^before: before must be a sequence number$/);
    await refused('after=3&before=10', /use one or the other/);
    await refused('after=3&limit=10', /use one or the other/);
    await refused('format=sse&limit=10', /pages \(before, limit\) are JSON/);
    await refused('types=tool-end,nope&limit=5', /"nope" is not an event type/);
    await refused('types=tool-end', /types filters JSON reads/);
  });

  it('asks for the token like every other route, and answers 404 for an unknown session', async () => {
    const none = await app.inject({ url: `/api/sessions/${id}/events?limit=5` });
    expect(none.statusCode).toBe(401);
    expect(
      (await app.inject({ url: `/api/sessions/${id}/events?limit=5`, headers: { authorization: `Bearer ${token}x` } }))
        .statusCode,
    ).toBe(401);
    const missing = await app.inject({ url: '/api/sessions/nope/events?limit=5', headers: auth });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ error: 'not_found', message: 'session nope does not exist' });
  });

  it('keeps the unpaged JSON read whole, filterable by type', async () => {
    const all = (await app.inject({ url: `/api/sessions/${id}/events?format=json`, headers: auth })).json() as {
      seq: number;
    }[];
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
    const checks = (
      await app.inject({ url: `/api/sessions/${id}/events?format=json&after=200&types=check-finished`, headers: auth })
    ).json() as { seq: number }[];
    expect(checks.map((e) => e.seq)).toEqual([203, 213, 223, 233, 243]);
  });
});
