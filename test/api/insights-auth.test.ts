import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

const token = 'insights-test-token-0123456789';

/** GET /api/insights is an API route like the others: behind PATCHBAY_API_TOKEN when one is set. */
describe('GET /api/insights behind the API token', () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await createApiFixture();
  });
  afterAll(() => fx?.close());

  it('refuses a request without the token, and answers one with it (an empty period: no sessions)', async () => {
    const app = fx.server({ apiToken: token });
    const denied = await app.inject({ method: 'GET', url: '/api/insights' });
    expect(denied.statusCode).toBe(401);
    const csv = await app.inject({
      method: 'GET',
      url: '/api/insights?from=2020-01-01&to=2020-02-01&format=csv',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(csv.statusCode).toBe(200);
    expect(csv.body).toBe(
      'repo,sessions,prsOpened,merged,closed,mergeRate,medianTimeToMergeMs,humanCommitsPerMerged,reviewRoundsPerPr,reverts,mergeCiFailures,costPerMergedUsd,medianFirstReplyMs,medianToPrMs\r\n(all),0,0,0,0,,,,,0,0,,,\r\n',
    );
    const bad = await app.inject({
      method: 'GET',
      url: '/api/insights?groupBy=colour',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid_input', message: expect.stringContaining('groupBy') });
    await app.close();
  });
});

/** GET /metrics is public to the router (Prometheus sends its own bearer token) but checks the token itself. */
describe('GET /metrics behind the API token', () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await createApiFixture();
  });
  afterAll(() => fx?.close());

  it('refuses a scrape without the token or with a wrong one, and answers one with it', async () => {
    const metrics = { render: async () => 'patchbay_up 1\n', contentType: 'text/plain; version=0.0.4' };
    const app = fx.server({ apiToken: token, metrics });
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const wrong = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
    const scraped = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } });
    expect(scraped.statusCode).toBe(200);
    expect(scraped.body).toBe('patchbay_up 1\n');
    await app.close();
  });
});
