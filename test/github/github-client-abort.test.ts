import { createServer, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PatchbayOctokit } from '../../integrations/github/github-client.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';
import { waitFor } from '../helpers/wait-for.ts';

/**
 * A GitHub call whose caller gave up (a stop, a shutdown) ends there. Octokit reports an aborted
 * fetch as a 500, which the retry plugin retried three more times (1 s, 4 s, 9 s apart): a
 * shutdown during the PR step waited 14 s past its grace. Each attempt is one fetch, counted.
 */
describe('the GitHub client when its request is aborted', () => {
  const held: ServerResponse[] = [];
  let received = 0;
  let url: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    // A GitHub that takes the request and does not answer yet.
    const server = createServer((_req, res) => {
      received += 1;
      held.push(res);
    });
    const listening = await listenOnLoopback(server);
    url = `http://127.0.0.1:${listening.port}/api/v3`;
    close = async () => {
      for (const res of held) res.destroy();
      await listening.close();
    };
  });
  afterAll(() => close());

  const throttle = { onRateLimit: () => false, onSecondaryRateLimit: () => false };

  it('is not retried once aborted, while a failure of GitHub itself still is', { timeout: 30_000 }, async () => {
    const fetches: string[] = [];
    const octokit = new PatchbayOctokit({
      baseUrl: url,
      throttle,
      request: {
        fetch: (input: string | URL | Request, init?: RequestInit) => {
          fetches.push(String(input));
          return fetch(input, init);
        },
      },
    });
    const controller = new AbortController();
    const call = octokit.request('POST /repos/{owner}/{repo}/pulls', {
      owner: 'o',
      repo: 'r',
      head: 'b',
      base: 'main',
      request: { signal: controller.signal },
    });
    await waitFor(async () => received === 1, 'the request to reach GitHub');
    controller.abort(new Error('shutting down'));
    await expect(call).rejects.toThrow();
    expect(fetches).toHaveLength(1);

    // A 502 from GitHub, with no abort, is retried as before (retryAfter 0 keeps the test short).
    let answered = 0;
    const flaky = new PatchbayOctokit({
      baseUrl: url,
      throttle,
      retry: { retryAfterBaseValue: 0 },
      request: {
        fetch: async (_input: string | URL | Request) => {
          answered += 1;
          return new Response(JSON.stringify({ message: 'Bad Gateway' }), {
            status: answered === 1 ? 502 : 200,
            headers: { 'content-type': 'application/json' },
          });
        },
      },
    });
    await flaky.request('GET /app');
    expect(answered).toBe(2);
  });
});
