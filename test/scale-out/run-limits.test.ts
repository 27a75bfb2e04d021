import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/events.ts';
import type { SessionStore } from '../../src/sessions/store/session-store.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';
const SESSIONS = 5;
const LIMIT = 2;

/**
 * MAX_RUNNING_SESSIONS over two worker processes whose WORKER_CONCURRENCY would allow twice as
 * many: never more than the limit run at once, and every session that has to wait is told in its
 * Slack thread where it stands, then told again when it starts.
 */
describe('MAX_RUNNING_SESSIONS across worker processes', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let upstream: RemoteFixture;
  let processes: ProcessesOnOneDatabase;
  let store: SessionStore;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await github.addRepo(owner, 'shop', upstream.remote, 77);
    processes = await startProcessesOnOneDatabase('patchbay-limits');
    store = processes.store!;
  }, 60_000);

  afterAll(async () => {
    await processes?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  it(`runs at most ${LIMIT} sessions at once and tells the others where they stand, then that they start`, {
    timeout: 300_000,
  }, async () => {
    await processes.writeScenario({
      turns: [
        { toolCalls: [{ name: 'run_shell', input: { command: 'echo working > WORK.md; sleep 3' } }] },
        { text: 'Done.' },
      ],
      verifier: [{ toolCalls: [{ name: 'record_verdict', input: passingVerdict }] }],
    });
    const shared = {
      PUBLIC_URL: 'http://patchbay.test',
      SANDBOX_EGRESS_ALLOW: 'none',
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      GITHUB_APP_ID: String(github.appId),
      GITHUB_APP_PRIVATE_KEY: github.privateKey,
      GITHUB_WEBHOOK_SECRET: 'limits-webhook-secret',
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
      WORKER_CONCURRENCY: String(LIMIT),
      MAX_RUNNING_SESSIONS: String(LIMIT),
    };
    const start = (command: 'api' | 'worker', name: string) => processes.start(command, name, shared);
    const [api] = await Promise.all([start('api', 'api'), start('worker', 'worker1'), start('worker', 'worker2')]);

    const host = new URL(github.gitUrl).host;
    const threads: string[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const mention = appMention({ user: 'U0ALICE01', text: `task ${i} in <https://${host}/${owner}/shop>` });
      threads.push(mention.ts);
      const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(mention)));
      expect(
        (await fetch(`${api.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body })).status,
      ).toBe(200);
    }
    const ids = await Promise.all(
      threads.map((threadTs) =>
        waitFor(
          async () => (await store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs }))?.id,
          'the session',
          60_000,
        ),
      ),
    );
    const sessions = await waitFor(
      async () => {
        const all = await Promise.all(ids.map((id) => store.get(id)));
        return all.every((s) => s && ['completed', 'failed', 'cancelled'].includes(s.status))
          ? all.map((s) => s!)
          : undefined;
      },
      'every session to finish',
      240_000,
    );
    expect(sessions.map((s) => s.status)).toEqual(ids.map(() => 'completed'));

    // Never more than LIMIT running at once, over both workers (from the log's own times).
    const logs = new Map<string, StoredEvent[]>();
    for (const id of ids) logs.set(id, await store.events(id));
    const edges: { at: number; delta: number }[] = [];
    for (const events of logs.values()) {
      for (const e of events) {
        if (e.event.type !== 'status-changed') continue;
        if (e.event.to === 'running') edges.push({ at: Date.parse(e.at), delta: 1 });
        else if (e.event.from === 'running') edges.push({ at: Date.parse(e.at), delta: -1 });
      }
    }
    edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
    let running = 0;
    let peak = 0;
    for (const edge of edges) {
      running += edge.delta;
      peak = Math.max(peak, running);
    }
    expect(peak).toBeLessThanOrEqual(LIMIT);

    // Those that waited were told where they stood, then told that they started, in that order.
    // A worker that takes a run while the limit is full tells it at once: the two workers take four
    // of the five at once and only two may run. A session no worker has taken is told by a sweep
    // every 5 s once it has waited 5 s, so one that starts within 10 s may never be told; one that
    // started later was.
    const waited = ids.filter((id) => logs.get(id)!.some((e) => e.event.type === 'queue-waiting'));
    expect(waited.length).toBeGreaterThanOrEqual(2 * LIMIT - LIMIT);
    const startedLate = ids.filter((id) => {
      const events = logs.get(id)!;
      const running = events.find((e) => e.event.type === 'status-changed' && e.event.to === 'running')!;
      return Date.parse(running.at) - Date.parse(events[0]!.at) > 11_000;
    });
    for (const id of startedLate) expect(waited, `${id} started more than 11 s after it was asked for`).toContain(id);
    // The queue's order is the order the sessions were created in, which need not be the order of the
    // mentions: deliveries of different threads are worked side by side.
    const created = (id: string) => Date.parse(logs.get(id)![0]!.at);
    const queueOrder = [...ids].sort((a, b) => created(a) - created(b));
    for (const id of waited) {
      const types = logs
        .get(id)!
        .map((e) => e.event.type)
        .filter((t) => t === 'queue-waiting' || t === 'queue-started' || t === 'workspace-ready');
      expect(types).toEqual(['queue-waiting', 'queue-started', 'workspace-ready']);
      const told = logs.get(id)!.find((e) => e.event.type === 'queue-waiting')!.event;
      if (told.type !== 'queue-waiting') throw new Error('unreachable');
      expect(told.limit).toBe(LIMIT);
      // Sessions ahead: queued earlier and not yet started when it was told.
      expect(told.ahead).toBeLessThan(queueOrder.indexOf(id) + 1);
      const thread = slack.thread(CHANNEL, threads[ids.indexOf(id)]!).map((m) => m.text);
      await waitFor(
        async () => slack.thread(CHANNEL, threads[ids.indexOf(id)]!).some((m) => m.text.startsWith('Starting now')),
        `the start notice in ${id}'s thread`,
        60_000,
      );
      const texts = slack.thread(CHANNEL, threads[ids.indexOf(id)]!).map((m) => m.text);
      const place =
        told.ahead === 0 ? 'you are next' : `${told.ahead} session${told.ahead === 1 ? '' : 's'} ahead of you`;
      const queuedAt = texts.findIndex((t) => t.startsWith(`Queued: ${place} (`));
      expect(queuedAt, JSON.stringify(thread)).toBeGreaterThanOrEqual(0);
      expect(texts.findIndex((t) => t.startsWith('Starting now'))).toBeGreaterThan(queuedAt);
    }
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });
});
