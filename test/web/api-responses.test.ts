import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError, UnexpectedAnswer } from '../../web/src/api.ts';

/** The page's fetch, answering every request with `body` and `status`. */
function answer(body: unknown, status = 200) {
  vi.stubGlobal(
    'fetch',
    vi.fn(async () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })),
  );
}

afterEach(() => {
  vi.unstubAllGlobals();
});

const summary = {
  id: 's1',
  createdAt: '2026-12-01T09:00:00.000Z',
  updatedAt: '2026-12-01T09:00:00.000Z',
  status: 'running',
  repo: 'https://github.com/acme/site',
  title: 'Fix the typo',
  requester: { source: 'web', id: 'api', name: 'API user' },
  branch: null,
  surfaces: ['web'],
  prUrl: null,
  checks: 'none',
  url: 'http://localhost/sessions/s1',
  parentId: null,
};

describe('the web client parses what the API answers', () => {
  it('hands the page an answer that matches the response schema', async () => {
    answer({ sessions: [summary], repos: ['https://github.com/acme/site'] });
    const list = await api.list({});
    expect(list.sessions.map((s) => s.id)).toEqual(['s1']);
  });

  it('refuses an answer of another shape with an error that says which field, instead of a part of it', async () => {
    answer({ sessions: [{ ...summary, status: 'sleeping' }], repos: [] });
    const failure = api.list({});
    await expect(failure).rejects.toBeInstanceOf(UnexpectedAnswer);
    await expect(failure).rejects.toThrow(/GET \/api\/sessions is not what this page expects \(sessions\.0\.status: /);
  });

  it("keeps the server's message for an answer that is not 2xx", async () => {
    answer({ error: 'not_found', message: 'session s2 does not exist' }, 404);
    const failure = api.session('s2');
    await expect(failure).rejects.toBeInstanceOf(ApiError);
    await expect(failure).rejects.toThrow('session s2 does not exist');
  });
});
