import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { isPatchbayError } from '../../src/core/errors.ts';
import { PatchbayOctokit } from '../../integrations/github/github-client.ts';
import { githubStartError } from '../../integrations/github/github-module.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';

/** GET /app as the start makes it, with Octokit's real errors: refused, 5xx, 401. */
async function startErrorFor(status: number | 'refused') {
  const server = createServer((_req, res) =>
    res
      .writeHead(status === 'refused' ? 500 : status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ message: status === 401 ? 'A JSON web token could not be decoded' : 'Server Error' })),
  );
  const { port, close } = await listenOnLoopback(server);
  if (status === 'refused') await close();
  const apiUrl = `http://127.0.0.1:${port}`;
  try {
    await new PatchbayOctokit({
      baseUrl: apiUrl,
      throttle: { onRateLimit: () => false, onSecondaryRateLimit: () => false },
    }).request('GET /app', { request: { retries: 0 } });
    throw new Error('GET /app succeeded');
  } catch (error) {
    return { error: githubStartError(error, apiUrl), apiUrl };
  } finally {
    if (status !== 'refused') await close();
  }
}

describe('why the GitHub App could not start', () => {
  it('an unreachable GitHub (refused, or failing with a 5xx) is retryable and names GITHUB_API_URL', async () => {
    for (const status of ['refused', 503] as const) {
      const { error, apiUrl } = await startErrorFor(status);
      expect(isPatchbayError(error, 'service_unavailable') && error.retryable, String(status)).toBe(true);
      expect((error as Error).message).toMatch(
        new RegExp(
          `^GitHub cannot be reached at ${apiUrl.replaceAll('.', '\\.')} \\(.+\\): check this host's network and GITHUB_API_URL$`,
        ),
      );
    }
  });

  it('a GitHub that refuses the App is a configuration error naming the App id and key', async () => {
    const { error } = await startErrorFor(401);
    expect(isPatchbayError(error, 'config_invalid')).toBe(true);
    expect((error as Error).message).toMatch(
      /^GitHub refused the App \(GET \/app: 401 .+\): check GITHUB_APP_ID and the private key$/,
    );
  });
});
