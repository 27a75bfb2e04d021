import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArtifactLinks } from '../../src/api/artifact-links.ts';
import type { ApiServer } from '../../src/api/server.ts';
import type { ArtifactInfo } from '../../src/core/artifact-store.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { encodePng } from '../helpers/png-encode.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

const TOKEN = 'a-token-of-sixteen-chars';
const links = createArtifactLinks({ secret: 's'.repeat(40), publicUrl: 'https://patchbay.example.com/' });

/** A 2x1 PNG, red then blue. */
const tinyPng = () => encodePng(2, 1, (x) => (x === 0 ? [255, 0, 0] : [0, 0, 255]));

describe('artifact links', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let sessionId: string;
  let kept: ArtifactInfo;
  const png = tinyPng();

  beforeAll(async () => {
    fx = await createApiFixture();
    const store = createPgArtifactStore(fx.db);
    app = fx.server({ apiToken: TOKEN, publicUrl: 'https://patchbay.example.com', artifacts: { store, links } });
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'a', name: 'A' },
      text: 'pictures',
      repo: 'https://github.com/o/r',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    sessionId = started.session.id;
    kept = await store.save({
      sessionId,
      kind: 'screenshot',
      name: 'shot',
      mediaType: 'image/png',
      bytes: png,
      width: 2,
      height: 1,
    });
  });
  afterAll(() => fx.close());

  const path = (url: string) => url.replace('https://patchbay.example.com', '');

  it('serves the picture through its signed link without the token, as an image that runs nothing', async () => {
    const url = links.url(kept.id);
    expect(url).toMatch(/^https:\/\/patchbay\.example\.com\/artifacts\/[\w-]+\?sig=[\w-]+&exp=\d+$/);
    const res = await app.inject({ method: 'GET', url: path(url), headers: { host: 'patchbay.example.com' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).not.toContain('script-src');
    expect(res.rawPayload.equals(png)).toBe(true);
  });

  it('refuses a missing, wrong, foreign or expired signature the same way as an unknown id', async () => {
    const good = new URL(links.url(kept.id));
    const sig = good.searchParams.get('sig') ?? '';
    const exp = good.searchParams.get('exp') ?? '';
    const other = createArtifactLinks({ secret: 'o'.repeat(40), publicUrl: 'https://patchbay.example.com' });
    const expired = createArtifactLinks({ secret: 's'.repeat(40), publicUrl: 'https://x', ttlMs: -1000 });
    const refused = [
      `/artifacts/${kept.id}`,
      `/artifacts/${kept.id}?exp=${exp}`,
      `/artifacts/${kept.id}?sig=${sig.slice(1)}A&exp=${exp}`,
      `/artifacts/${kept.id}?sig=${sig}&exp=${Number(exp) + 1}`,
      path(other.url(kept.id)),
      path(expired.url(kept.id).replace('https://x', '')),
      `/artifacts/unknown-id?sig=${sig}&exp=${exp}`,
    ];
    const unknown = await app.inject({ method: 'GET', url: path(links.url('unknown-id')) });
    expect(unknown.statusCode).toBe(404);
    for (const url of refused) {
      const res = await app.inject({ method: 'GET', url });
      expect({ url, status: res.statusCode, body: res.body }).toEqual({ url, status: 404, body: unknown.body });
    }
  });

  it("lists a session's artifacts with their signed links, behind the token", async () => {
    const url = `/api/sessions/${sessionId}/artifacts`;
    expect((await app.inject({ method: 'GET', url })).statusCode).toBe(401);
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(200);
    const [listed, ...rest] = res.json();
    expect(rest).toEqual([]);
    expect(listed).toMatchObject({
      id: kept.id,
      kind: 'screenshot',
      name: 'shot',
      mediaType: 'image/png',
      width: 2,
      height: 1,
    });
    const image = await app.inject({ method: 'GET', url: path(listed.url) });
    expect(image.statusCode).toBe(200);
    expect(image.rawPayload.equals(png)).toBe(true);
  });
});
