import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-unreachable-start-0001';

/** A loopback port nothing listens on yet (connections to it are refused), to open later. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Slack coming back: a TCP relay on `port` to the fake's real port. */
async function relay(port: number, target: number): Promise<Server> {
  const server = createServer((socket) => {
    const upstream = connect(target, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

/**
 * Slack unreachable when Patchbay starts (the connection refused, as a firewall or an outage does):
 * the server starts anyway and serves, logs it once naming Slack and SLACK_API_URL, reports it per
 * integration on /healthz, and connects by itself once Slack answers.
 */
describe('Slack unreachable at start', () => {
  const lines: { level: number; msg: string; integration?: string }[] = [];
  let slack: FakeSlackApi;
  let app: Patchbay;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  let port: number;
  let back: Server | undefined;
  let startedInMs: number;

  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT_TOKEN });
    port = await freePort();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-slack-unreachable-'));
    database = await createTestDatabase();
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const text of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(text));
        done();
      },
    });
    const env = {
      DATA_DIR: dir,
      DATABASE_URL: database.url,
      PORT: '0',
      SANDBOX_EGRESS_ALLOW: 'none',
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: 'unreachable-start-secret',
      SLACK_API_URL: `http://127.0.0.1:${port}/api/`,
    };
    const config = loadConfig(env);
    const began = Date.now();
    app = await startPatchbay(config, {
      log: createLogger('info', sink),
      serve: true,
      work: true,
      model: createScriptedProvider({ scenario: [{ text: 'done' }] }),
      integrations: (context) => buildIntegrations(config, context),
      integrationRetry: { firstDelayMs: 200, maxDelayMs: 400 },
    });
    startedInMs = Date.now() - began;
  });
  afterAll(async () => {
    await app?.close();
    back?.close();
    await slack?.close();
    await database?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves without it, says so once with the variable to check, and connects when Slack is back', {
    timeout: 60_000,
  }, async () => {
    // Not the SDK's half a minute of retries before dying: the start does not wait for Slack.
    expect(startedInMs).toBeLessThan(15_000);
    const health = await (await fetch(`${app.url}/healthz`)).json();
    expect(health).toEqual({
      ok: true,
      integrations: {
        slack: {
          ok: false,
          status: 'unreachable',
          error: expect.stringMatching(
            new RegExp(
              `^Slack cannot be reached at http://127\\.0\\.0\\.1:${port}/api/ \\(.+\\): check this host's network and SLACK_API_URL$`,
            ),
          ),
          attempts: expect.any(Number),
          retryInSeconds: expect.any(Number),
        },
      },
    });
    // The rest serves.
    expect((await fetch(`${app.url}/api/sessions`)).status).toBe(200);

    // A few attempts later, still one warning.
    await waitFor(async () => {
      const h = (await (await fetch(`${app.url}/healthz`)).json()) as {
        integrations: { slack: { attempts?: number } };
      };
      return (h.integrations.slack.attempts ?? 0) >= 3;
    }, 'a few attempts');
    const warned = lines.filter((l) => l.level >= 40 && l.integration === 'slack');
    expect(warned).toEqual([
      expect.objectContaining({
        level: 40,
        msg: expect.stringMatching(
          /^Slack cannot be reached at .*SLACK_API_URL; retrying in the background while the rest of Patchbay serves$/,
        ),
      }),
    ]);

    back = await relay(port, Number(new URL(slack.apiUrl).port));
    await waitFor(
      async () =>
        ((await (await fetch(`${app.url}/healthz`)).json()) as { integrations: { slack: { ok: boolean } } })
          .integrations.slack.ok,
      'Slack to connect',
    );
    expect(lines.some((l) => l.msg === 'Slack connected')).toBe(true);
    expect(slack.calls.filter((c) => c.method === 'auth.test').length).toBe(1);
    expect(slack.refused).toEqual([]);
  });
});
