import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/events.ts';
import type { SessionStore } from '../../src/sessions/store/session-store.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { linesAboveInfo } from '../helpers/server-process.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';

const run = promisify(execFile);
const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';
const SESSIONS = 20;

/** Every file the scripted model leaves on its branch, and the one it deletes. */
const expectedFiles = { 'A.md': 'alpha\n', 'B.md': 'beta\n', 'C.md': 'gamma\n' };

/**
 * Scale-out as a user runs it: two `patchbay api` and two `patchbay worker` processes, each a real
 * process configured from the environment only, on one PostgreSQL; the workers on separate data
 * directories, as on separate hosts. Slack (signed events in, Web API out) and GitHub (App auth,
 * REST, git over HTTP) are loopback fakes; the model is scripted. Mentions go to both API
 * processes; runs happen only in the workers. One worker is SIGKILLed while it holds runs that have
 * already changed files: the other takes them over from the checkpoints in the database, and
 * every branch pushed to GitHub must hold all of the session's work.
 */
describe('two API and two worker processes on one PostgreSQL', () => {
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
    await upstream.pushCommit('OLD.md', 'to be deleted\n', 'Add a file the sessions delete');
    await github.addRepo(owner, 'shop', upstream.remote, 77);
    processes = await startProcessesOnOneDatabase('patchbay-scale');
    store = processes.store!;
  }, 60_000);

  afterAll(async () => {
    await processes?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  it('finishes 20 concurrent sessions once each, and a SIGKILLed worker loses no session, event or file change', {
    timeout: 480_000,
  }, async () => {
    await processes.writeScenario({
      turns: [
        { toolCalls: [{ name: 'write_file', input: { path: 'A.md', content: expectedFiles['A.md'] } }] },
        { toolCalls: [{ name: 'run_shell', input: { command: 'echo one >> progress.log; sleep 1' } }] },
        { toolCalls: [{ name: 'write_file', input: { path: 'B.md', content: expectedFiles['B.md'] } }] },
        { toolCalls: [{ name: 'run_shell', input: { command: 'rm OLD.md; echo two >> progress.log; sleep 2' } }] },
        { toolCalls: [{ name: 'write_file', input: { path: 'C.md', content: expectedFiles['C.md'] } }] },
        { text: 'Wrote A, B and C, removed OLD.md.' },
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
      GITHUB_WEBHOOK_SECRET: 'scale-out-webhook-secret',
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
      QUEUE_HEARTBEAT_SECONDS: '10',
      QUEUE_MONITOR_SECONDS: '1',
      // The killed worker's runs are taken over once their leases lapse: 10 s (as paused-worker's)
      // instead of the default 30 s, which the other worker spent waiting with its slots held.
      RUN_LEASE_SECONDS: '10',
      WORKER_CONCURRENCY: '3',
    };
    const start = (command: 'api' | 'worker', name: string) =>
      processes.start(command, name, { ...shared, ...(command === 'worker' && { WORKER_HEALTH_PORT: '0' }) });
    const [api1, api2, worker1, worker2] = await Promise.all([
      start('api', 'api1'),
      start('api', 'api2'),
      start('worker', 'worker1'),
      start('worker', 'worker2'),
    ]);
    expect(api1.url && api2.url).toBeTruthy();
    expect(worker1.url).toBeUndefined();
    // A worker serves no API, only its health check, for a container's or an orchestrator's probe.
    for (const worker of [worker1, worker2]) {
      const health = await fetch(worker.health!);
      expect([health.status, await health.json()]).toEqual([200, { ok: true }]);
      expect((await fetch(worker.health!.replace('/healthz', '/api/sessions'))).status).toBe(404);
    }

    // Notices of every session's changes, on API #1 only: they come through PostgreSQL's NOTIFY
    // from the workers (the stream never re-reads the log, so nothing else could bring them).
    const notices: { sessionId: string; seq: number; type: string }[] = [];
    const noticeStream = new AbortController();
    void readSse(`${api1.url}/api/sessions-stream`, noticeStream.signal, (frame) => {
      if (frame.event === 'notice') notices.push(JSON.parse(frame.data) as (typeof notices)[number]);
    });

    const host = new URL(github.gitUrl).host;
    const threads: string[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const mention = appMention({
        user: 'U0ALICE01',
        text: `task ${i}: write the three files in <https://${host}/${owner}/shop>`,
      });
      threads.push(mention.ts);
      const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(mention)));
      const api = i % 2 === 0 ? api1 : api2;
      const response = await fetch(`${api.url}/slack/events`, {
        method: 'POST',
        headers: signed.headers,
        body: signed.body,
      });
      expect(response.status).toBe(200);
    }
    const sessionIds = await Promise.all(
      threads.map((threadTs) =>
        waitFor(
          async () => (await store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs }))?.id,
          `the session of thread ${threadTs}`,
          60_000,
        ),
      ),
    );

    // Every session's events as an SSE client of API #1 sees them, from the session's first moments.
    const streamed = new Map<string, StoredEvent[]>(sessionIds.map((id) => [id, []]));
    const streams = new AbortController();
    for (const id of sessionIds) {
      void readSse(`${api1.url}/api/sessions/${id}/events`, streams.signal, (frame) => {
        if (frame.id) streamed.get(id)!.push(JSON.parse(frame.data) as StoredEvent);
      });
    }

    // The kill: worker #1 holds a run that has recorded file changes and is not done yet.
    const victim = await waitFor(
      async () => {
        for (const id of sessionIds) {
          if (!existsSync(join(processes.dataDir('worker1'), 'workspaces', id))) continue;
          const session = await store.get(id);
          if (session?.status !== 'running') continue;
          const ends = await store.events(id, { types: ['tool-end'] });
          if (ends.length >= 3 && ends.length < 5) return id;
        }
        return undefined;
      },
      'a run on worker #1 with recorded file changes',
      180_000,
    );
    worker1.child.kill('SIGKILL');
    await worker1.exited;
    const cutOff = (
      await Promise.all(
        sessionIds.map(async (id) =>
          (await store.get(id))?.status === 'running' &&
          existsSync(join(processes.dataDir('worker1'), 'workspaces', id))
            ? id
            : undefined,
        ),
      )
    ).filter((id): id is string => id !== undefined);
    expect(cutOff).toContain(victim);

    const finished = await waitFor(
      async () => {
        const sessions = await Promise.all(sessionIds.map((id) => store.get(id)));
        return sessions.every((s) => s && ['completed', 'failed', 'cancelled'].includes(s.status))
          ? sessions.map((s) => s!)
          : undefined;
      },
      'every session to finish',
      360_000,
    );
    const summary = finished.map((s) => `${s.id} ${s.status} ${s.error ?? ''}`).join('\n');
    expect(
      finished.filter((s) => s.status !== 'completed'),
      summary,
    ).toEqual([]);

    for (const session of finished) {
      const events = await store.events(session.id);
      // No event lost or doubled: seqs are 1..n, each tool call started and ended once.
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const terminal = events.filter(
        (e) => e.event.type === 'status-changed' && ['completed', 'failed', 'cancelled'].includes(e.event.to),
      );
      expect(terminal.map((e) => e.event.type === 'status-changed' && e.event.to)).toEqual(['completed']);
      const ends = events.filter((e) => e.event.type === 'tool-end');
      const callIds = ends.map((e) => (e.event.type === 'tool-end' ? e.event.callId : ''));
      expect(new Set(callIds).size).toBe(callIds.length);
      expect(ends.map((e) => (e.event.type === 'tool-end' ? e.event.name : ''))).toEqual([
        'write_file',
        'run_shell',
        'write_file',
        'run_shell',
        'write_file',
      ]);
      expect(events.filter((e) => e.event.type === 'branch-pushed')).toHaveLength(1);
      const resumed = events.some((e) => e.event.type === 'run-resumed');
      expect(resumed, `session ${session.id} resumed after the kill`).toBe(cutOff.includes(session.id));

      // No file change lost: the pushed branch holds every file written before and after the kill.
      const gitDir = github.repo(owner, 'shop').gitDir;
      const show = async (path: string) =>
        (await run('git', ['--git-dir', gitDir, 'show', `${session.branch}:${path}`])).stdout;
      for (const [path, content] of Object.entries(expectedFiles))
        expect(await show(path), `${path} on ${session.branch}`).toBe(content);
      await expect(show('OLD.md')).rejects.toThrow();
      const progress = (await show('progress.log')).trim().split('\n');
      // An interrupted command runs again on resume, on the workspace as it was before it: each
      // command's line is there exactly once (a multiset: a command applied twice shows).
      expect([...progress].sort()).toEqual(['one', 'two']);

      // Exactly one pull request per session, and one final reply in its Slack thread.
      expect(github.pulls.filter((p) => p.head === session.branch)).toHaveLength(1);
    }

    // The SSE client on API #1 saw every event of every run, in order, once.
    await waitFor(
      async () => {
        for (const id of sessionIds) {
          const lastSeq = (await store.get(id))!.lastSeq;
          if (streamed.get(id)!.length < lastSeq) return false;
        }
        return true;
      },
      'the SSE streams to catch up',
      30_000,
    );
    for (const id of sessionIds) {
      const stored = await store.events(id);
      expect(streamed.get(id)!.map((e) => e.seq)).toEqual(stored.map((e) => e.seq));
      expect(streamed.get(id)!.map((e) => e.event.type)).toEqual(stored.map((e) => e.event.type));
      // The worker's terminal status change reached API #1 as a notice.
      const done = stored.findLast((e) => e.event.type === 'status-changed')!;
      expect(
        notices.some((n) => n.sessionId === id && n.seq === done.seq && n.type === 'status-changed'),
        `notice of ${id}'s end on API #1`,
      ).toBe(true);
    }
    streams.abort();
    noticeStream.abort();

    // An API process holds no mirror the workers pushed through; it fetches one to show the diff.
    const diff = (await (await fetch(`${api2.url}/api/sessions/${victim}/diff`)).json()) as {
      state: string;
      files?: { path: string; status: string }[];
    };
    expect(diff.state).toBe('ready');
    expect(diff.files!.map((f) => `${f.status} ${f.path}`).sort()).toEqual([
      'added A.md',
      'added B.md',
      'added C.md',
      'added progress.log',
      'deleted OLD.md',
    ]);

    // Runs happened only in workers: the API processes never took one.
    for (const api of [api1, api2]) expect(api.lines().some((l) => l.msg === 'workspace prepared')).toBe(false);
    expect(worker2.lines().some((l) => l.msg === 'restoring the work of an earlier run from its checkpoint')).toBe(
      true,
    );

    const hasLink = (ts: string) =>
      slack
        .thread(CHANNEL, ts)
        .some((m) => /pull\/\d+/.test(m.text) || /pull\/\d+/.test(JSON.stringify(m.blocks ?? [])));
    await waitFor(async () => threads.every(hasLink), 'the PR link in every thread', 120_000).catch((error: Error) => {
      const missing = threads
        .filter((ts) => !hasLink(ts))
        .map((ts) => `${ts}: ${JSON.stringify(slack.thread(CHANNEL, ts).map((m) => m.text))}`);
      const warnings = [api1, api2]
        .flatMap((p) => linesAboveInfo(p.lines()))
        .map((l) => JSON.stringify(l).slice(0, 400));
      throw new Error(
        `${error.message}\nthreads without it:\n${missing.join('\n')}\nAPI warnings:\n${warnings.join('\n')}`,
      );
    });
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
    for (const proc of [api1, api2, worker2])
      expect(linesAboveInfo(proc.lines()).filter((l) => (l.level ?? 0) >= 50)).toEqual([]);
  });
});

type SseFrame = { id?: string; event?: string; data: string };

/** Reads a Server-Sent Events stream until aborted, calling `onFrame` per frame. */
async function readSse(url: string, signal: AbortSignal, onFrame: (frame: SseFrame) => void): Promise<void> {
  try {
    const response = await fetch(url, { signal, headers: { accept: 'text/event-stream' } });
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: SseFrame = { data: '' };
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) frame.id = line.slice(4);
          else if (line.startsWith('event: ')) frame.event = line.slice(7);
          else if (line.startsWith('data: ')) frame.data += line.slice(6);
        }
        if (frame.data) onFrame(frame);
      }
    }
  } catch {
    // Ends when aborted or when the process goes away (after a failed assertion); what arrived
    // before is what the test checks.
  }
}
