import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import { knowledgeKey } from '../../src/harness/knowledge/load-knowledge.ts';
import { sessionAllowances } from '../../src/sessions/inbound/egress-allowances.ts';
import { createKnowledgeStore } from '../../src/sessions/harness-stores/pg-knowledge-store.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

const TOKEN = 'test-token-0123456789abcdef';
const REPO = 'https://example.com/acme/widgets.git';
const auth = { authorization: `Bearer ${TOKEN}` };

describe('allowing refused hosts through the API (the page uses these routes)', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  beforeAll(async () => {
    fx = await createApiFixture();
    app = fx.server({ apiToken: TOKEN });
    const document = { setup: [], checks: [], conventions: [], instructions: [], sources: [] };
    await createKnowledgeStore(fx.db).saveExtracted(knowledgeKey(REPO), 'c0ffee', document);
  });
  afterAll(() => fx.close());

  const newSession = async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/sessions',
      headers: auth,
      payload: { repo: REPO, prompt: 'Install the deps', author: { name: 'Alice' } },
    });
    return (created.json() as { id: string }).id;
  };
  const allow = (id: string, payload: object, headers: Record<string, string> = auth) =>
    app.inject({ method: 'POST', url: `/api/sessions/${id}/egress-allow`, headers, payload });
  const revoke = (payload: object) =>
    app.inject({
      method: 'POST',
      url: `/api/repos/${encodeURIComponent(REPO)}/egress-allow/revoke`,
      headers: auth,
      payload,
    });
  const names = async (id: string) =>
    (await sessionAllowances({ store: fx.store, knowledge: createKnowledgeStore(fx.db) }, id)).map((r) =>
      r.kind === 'domain' ? `${r.domain}:${r.port ?? '80/443'}` : r.address,
    );

  it('for this session: only that session; for the repository: every session on it, until revoked', async () => {
    const first = await newSession();
    const second = await newSession();
    const forSession = await allow(first, { host: 'Files.Example.com', port: 8443, scope: 'session' });
    expect(forSession.statusCode).toBe(201);
    expect(forSession.json()).toEqual({ host: 'files.example.com', port: 8443, scope: 'session' });
    expect(await names(first)).toEqual(['files.example.com:8443']);
    expect(await names(second)).toEqual([]);

    const forRepo = await allow(first, { host: 'pkg.example.com', scope: 'repository', author: { name: 'Operator' } });
    expect(forRepo.statusCode).toBe(201);
    expect(await names(first)).toEqual(['files.example.com:8443', 'pkg.example.com:80/443']);
    expect(await names(second)).toEqual(['pkg.example.com:80/443']);

    // The audit: who, where and when, in the session's events.
    const events = (
      await app.inject({ url: `/api/sessions/${first}/events?format=json&types=egress-allowed`, headers: auth })
    ).json() as { event: { type: string } }[];
    const audit = events.map((e) => e.event);
    expect(audit).toMatchObject([
      { host: 'files.example.com', port: 8443, scope: 'session', surface: 'web', actor: { source: 'web' } },
      { host: 'pkg.example.com', scope: 'repository', surface: 'web', actor: { name: 'Operator' } },
    ]);
    expect(audit.every((e) => typeof (e as { at?: unknown }).at === 'string')).toBe(true);

    // A stale edit of the document (without the list) keeps the allowed host.
    const stale = { setup: [], checks: [], conventions: ['squash'], instructions: [], sources: [] };
    const put = await app.inject({
      method: 'PUT',
      url: `/api/repos/${encodeURIComponent(REPO)}/knowledge`,
      headers: auth,
      payload: { document: stale },
    });
    expect(put.statusCode).toBe(200);
    expect(put.json().document.egressAllow).toMatchObject([{ host: 'pkg.example.com', by: 'Operator' }]);

    expect((await revoke({ host: 'nothing.example.com' })).statusCode).toBe(404);
    expect((await revoke({ host: 'pkg.example.com', author: { name: 'Olga' } })).statusCode).toBe(200);
    expect(await names(second)).toEqual([]);
    const revoked = (await fx.store.events(first, { types: ['egress-revoked'] })).map((e) => e.event);
    expect(revoked).toMatchObject([{ host: 'pkg.example.com', actor: { name: 'Olga' }, surface: 'web' }]);
  });

  it.each([
    ['10.1.2.3', /10\.1\.2\.3 is a private address/],
    ['169.254.169.254', /link-local address/],
    ['localhost', /single-label/],
    ['metadata.google.internal', /local name/],
    ['*.example.com', /wildcard/],
  ])('refuses %s with why, and records nothing', async (host, why) => {
    const id = await newSession();
    const res = await allow(id, { host, scope: 'repository' });
    expect(res.statusCode).toBe(422);
    expect(res.json().message).toMatch(why);
    expect(await fx.store.events(id, { types: ['egress-allowed'] })).toEqual([]);
    expect(await names(id)).toEqual([]);
  });

  it('needs the API token', async () => {
    const id = await newSession();
    expect((await allow(id, { host: 'pkg.example.com', scope: 'session' }, {})).statusCode).toBe(401);
  });
});
