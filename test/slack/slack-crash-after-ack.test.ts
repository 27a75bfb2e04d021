import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody } from '../fakes/fake-slack-events.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { BOT_TOKEN, SIGNING_SECRET, users } from './slack-fixture.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';

const CHANNEL = 'C123ABC456';

/** Starts `patchbay serve` as its own process and resolves with the URL it listens on. */
function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['src/cli.ts', 'serve'], {
    // A developer's .env in the checkout (read by every command) stays out of the test's settings.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PATCHBAY_ENV_FILE: '/dev/null', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match) resolve({ child, url: match[1]! });
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`patchbay serve exited with ${code}:\n${output}`)));
  });
}

describe('a Slack event acknowledged just before the server is killed', () => {
  let slack: FakeSlackApi;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT_TOKEN, users });
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-slack-crash-'));
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await slack.close();
    await database.close();
    await removeDataDir(dir);
  });

  it('is worked after a restart: SIGKILL right after the ack loses nothing', { timeout: 300_000 }, async () => {
    const env = {
      DATABASE_URL: database.url,
      DATA_DIR: join(dir, 'data'),
      PORT: '0',
      LOG_LEVEL: 'info',
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      QUEUE_HEARTBEAT_SECONDS: '10',
      QUEUE_MONITOR_SECONDS: '1',
    };
    const first = await startServer(env);
    children.push(first.child);
    // The first server's work on the event cannot finish before the kill: Slack holds its first calls.
    slack.rateLimit('reactions.add', 120, 1);
    slack.rateLimit('users.info', 120, 1);

    const mention = appMention({ user: 'U0ALICE01', text: 'fix the flaky checkout test' });
    const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(mention)));
    const ack = await fetch(`${first.url}/slack/events`, {
      method: 'POST',
      headers: signed.headers,
      body: signed.body,
    });
    expect(ack.status).toBe(200);
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    expect(slack.thread(CHANNEL, mention.ts)).toEqual([]);
    // Slack answers normally again for the restarted server.
    slack.rateLimit('reactions.add', 0, 0);
    slack.rateLimit('users.info', 0, 0);

    const second = await startServer(env);
    children.push(second.child);
    const reply = await waitFor(
      async () => slack.thread(CHANNEL, mention.ts)[0],
      'the reply after the restart',
      240_000,
    );
    expect(reply.text).toBe(
      'Please paste the GitHub repository URL (private repositories work where the GitHub App is installed)',
    );
    second.child.kill('SIGTERM');
    await new Promise((resolve) => second.child.once('exit', resolve));
    expect(slack.thread(CHANNEL, mention.ts)).toHaveLength(1);
  });
});
