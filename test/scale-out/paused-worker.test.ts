import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/sessions/store/session-store.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { linesAboveInfo, serverApi } from '../helpers/server-process.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';

const run = promisify(execFile);
const owner = 'octo-org';
const LEASE_SECONDS = 10;

/**
 * A worker frozen mid-run (SIGSTOP of its process, as a long GC pause or a frozen VM): its database
 * connections stay open, so nothing tied to a connection can tell it is gone. One API and two
 * worker processes on one PostgreSQL, configured from the environment only, on separate data
 * directories as on separate hosts. The run must be taken over by the other worker within the
 * lease plus 15 s, finish there once, and when the frozen worker is resumed (SIGCONT) nothing it
 * writes may land: no event, transcript entry, checkpoint, push or pull request of its own.
 */
describe('a worker paused past its lease', () => {
  let github: FakeGitHub;
  let upstream: RemoteFixture;
  let processes: ProcessesOnOneDatabase;
  let store: SessionStore;

  beforeAll(async () => {
    github = await startFakeGitHub();
    upstream = await createRemote();
    await github.addRepo(owner, 'shop', upstream.remote, 77);
    processes = await startProcessesOnOneDatabase('patchbay-paused');
    store = processes.store!;
  }, 60_000);

  afterAll(async () => {
    await processes?.close();
    await github?.close();
    await upstream?.cleanup();
  });

  it('is taken over within the lease plus 15 s, and nothing it writes after SIGCONT lands', {
    timeout: 300_000,
  }, async () => {
    await processes.writeScenario({
      turns: [
        { toolCalls: [{ name: 'write_file', input: { path: 'A.md', content: 'alpha\n' } }] },
        // The pause lands while this command runs: its process is not stopped and finishes meanwhile.
        { toolCalls: [{ name: 'run_shell', input: { command: 'echo one >> progress.log; sleep 8' } }] },
        { toolCalls: [{ name: 'run_shell', input: { command: 'echo two >> progress.log' } }] },
        { text: 'Wrote A and the progress log.' },
      ],
      verifier: [{ toolCalls: [{ name: 'record_verdict', input: passingVerdict }] }],
    });
    const shared = {
      PUBLIC_URL: 'http://patchbay.test',
      SANDBOX_EGRESS_ALLOW: 'none',
      GITHUB_APP_ID: String(github.appId),
      GITHUB_APP_PRIVATE_KEY: github.privateKey,
      GITHUB_WEBHOOK_SECRET: 'paused-worker-webhook-secret',
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
      QUEUE_HEARTBEAT_SECONDS: '10',
      QUEUE_MONITOR_SECONDS: '1',
      RUN_LEASE_SECONDS: String(LEASE_SECONDS),
    };
    const start = (command: 'api' | 'worker', name: string) =>
      processes.start(command, name, { ...shared, ...(command === 'worker' && { WORKER_HEALTH_PORT: '0' }) });
    const [api, ...workers] = await Promise.all([
      start('api', 'api'),
      start('worker', 'worker1'),
      start('worker', 'worker2'),
    ]);
    const { id } = await serverApi<{ id: string }>({ url: api!.url! }, '/api/sessions', {
      method: 'POST',
      body: JSON.stringify({
        repo: `${github.gitUrl}/${owner}/shop`,
        prompt: 'Write A and the progress log',
        author: { name: 'Alice', email: 'alice@example.com' },
      }),
    });
    // Worker #1 is whichever took the run; it is paused while its long command runs.
    const holder = await waitFor(
      async () =>
        [1, 2].find((n) => existsSync(join(processes.dataDir(`worker${n}`), 'workspaces', id, 'progress.log'))),
      'the long command to run',
      120_000,
    );
    const worker1 = workers[holder - 1]!;
    const worker2 = workers[2 - holder]!;
    process.kill(worker1.pid, 'SIGSTOP');
    const pausedAt = Date.now();
    const resumed = await waitFor(
      async () => (await store.events(id, { types: ['run-resumed'] })).at(0),
      'another worker to take the run over',
      (LEASE_SECONDS + 15) * 1000 + 30_000,
    );
    const takeOverMs = Date.parse(resumed.at) - pausedAt;
    expect(takeOverMs, `taken over after ${takeOverMs} ms`).toBeLessThanOrEqual((LEASE_SECONDS + 15) * 1000);

    const done = await waitFor(
      async () => {
        const session = await store.get(id);
        return session && ['completed', 'failed', 'cancelled'].includes(session.status) && session;
      },
      'the session to end on worker #2',
      180_000,
    );
    expect(done.status, done.error ?? '').toBe('completed');
    const before = await store.events(id);
    const transcriptBefore = await store.transcript(id);

    // Worker #1 wakes up: its command finished long ago, and its run goes on from where it froze.
    const awake = worker1.lines().length;
    process.kill(worker1.pid, 'SIGCONT');
    const refused = await worker1
      .waitForLine((line) => typeof line.msg === 'string' && line.msg.includes('taken over by another run'), 30_000)
      .catch(() => undefined);
    // Give it time to try whatever else it would have done (its next turns, the push, the PR).
    await new Promise((resolve) => setTimeout(resolve, 5_000));

    const after = await store.events(id);
    expect(after.map((e) => `${e.seq} ${e.event.type}`)).toEqual(before.map((e) => `${e.seq} ${e.event.type}`));
    expect((await store.transcript(id)).length).toBe(transcriptBefore.length);
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i + 1));
    // Each call ended once: a multiset, so a call recorded twice shows.
    const ends = after.flatMap((e) => (e.event.type === 'tool-end' ? [e.event.name] : []));
    expect(ends).toEqual(['write_file', 'run_shell', 'run_shell']);
    expect(after.filter((e) => e.event.type === 'branch-pushed')).toHaveLength(1);
    expect(github.pulls.filter((p) => p.head === done.branch)).toHaveLength(1);
    const progress = (
      await run('git', ['--git-dir', github.repo(owner, 'shop').gitDir, 'show', `${done.branch}:progress.log`])
    ).stdout;
    expect(progress.trim().split('\n').sort()).toEqual(['one', 'two']);
    // The branch on GitHub is worker #2's push: worker #1 pushed nothing after it woke.
    const tip = (
      await run('git', ['--git-dir', github.repo(owner, 'shop').gitDir, 'rev-parse', done.branch!])
    ).stdout.trim();
    expect(after.find((e) => e.event.type === 'branch-pushed')?.event).toMatchObject({ commit: tip });
    expect(
      worker1
        .lines()
        .slice(awake)
        .filter((l) => l.msg === 'branch pushed' || l.msg === 'pull request opened'),
    ).toEqual([]);
    expect(github.refused).toEqual([]);
    // Its refused writes are logged, saying why.
    expect(refused, 'worker #1 logs that its run was taken over').toBeDefined();
    for (const proc of [api!, worker2])
      expect(linesAboveInfo(proc.lines()).filter((l) => (l.level ?? 0) >= 50)).toEqual([]);
  });
});
