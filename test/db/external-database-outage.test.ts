import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/events.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  linesAboveInfo,
  serverApi,
  sessionEnded,
  type LogLine,
  type ServerProcess,
} from '../helpers/server-process.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

/**
 * `patchbay serve` on an external DATABASE_URL that goes away mid-run and comes back. The database
 * is reached through a loopback TCP proxy, so cutting it drops every connection Patchbay holds and
 * refuses new ones, as a database host that went down would, without stopping the server for
 * anyone else. The queue's own crash detection is set to ten minutes: a run that carries on within
 * the test was taken up again by the reconnect, not by the queue noticing a dead worker.
 */
describe('patchbay serve when its external database goes away mid-run', () => {
  let remote: RemoteFixture;
  let processes: ProcessesOnOneDatabase;
  let proxy: TcpProxy;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    processes = await startProcessesOnOneDatabase('patchbay-db-outage');
    const target = new URL(processes.database!.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    // The command writes, waits until the test has cut the database (its marker), then writes again:
    // its end, and the turns after it, meet a database that is not there.
    const scenario = {
      turns: [
        {
          toolCalls: [
            {
              id: 'call_work',
              name: 'run_shell',
              input: {
                command: 'echo a > part-a.txt; while [ ! -f .git/cut ]; do sleep 0.1; done; echo b > part-b.txt',
                timeout_seconds: 120,
              },
            },
          ],
        },
        { toolCalls: [{ id: 'call_more', name: 'write_file', input: { path: 'part-c.txt', content: 'c\n' } }] },
        { text: 'All parts written.' },
      ],
    };
    await processes.writeScenario(scenario);
  });
  afterAll(async () => {
    await processes.close();
    await proxy.close();
    await remote.cleanup();
  });

  const api = <T>(path: string, init?: RequestInit) => serverApi<T>(server!, path, init);
  const health = async () => (await fetch(`${server!.url}/healthz`)).status;

  it('reconnects when it is back, the run carries on with all its work, and repeated errors are rate-limited', {
    timeout: 300_000,
  }, async () => {
    const dataDir = processes.dataDir('data');
    server = await processes.serve('data', {
      DATABASE_URL: proxy.via(processes.database!.url),
      QUEUE_HEARTBEAT_SECONDS: '600',
      QUEUE_MONITOR_SECONDS: '600',
      PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    });
    const { id } = await api<{ id: string }>('/api/sessions', {
      method: 'POST',
      body: JSON.stringify({
        repo: remote.remote,
        prompt: 'Write the three parts',
        author: { name: 'Alice', email: 'alice@example.com' },
      }),
    });
    const workspace = join(dataDir, 'workspaces', id);
    await waitFor(
      () =>
        access(join(workspace, 'part-a.txt')).then(
          () => true,
          () => false,
        ),
      'the command to start',
      120_000,
    );

    proxy.cut();
    const outageFrom = server.lines().length;
    await writeFile(join(workspace, '.git', 'cut'), '');
    // The database is gone for the server: its health says so (to every probe), and it keeps trying to get back.
    await waitFor(async () => (await health()) === 503, 'the health check to see the database gone', 30_000);
    for (let probe = 0; probe < 5; probe++) expect(await health()).toBe(503);
    await waitFor(
      () =>
        access(join(workspace, 'part-b.txt')).then(
          () => true,
          () => false,
        ),
      'the command to end during the outage',
      60_000,
    );
    await waitFor(async () => proxy.refused >= 10, 'ten refused connection attempts', 60_000);
    const refusedDuringOutage = proxy.refused;
    proxy.restore();

    await waitFor(async () => (await health()) === 200, 'the health check to see the database back', 60_000);
    const done = await sessionEnded(server, id);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    const tip = await remote.remoteBranch(done.branch!);
    for (const [file, content] of [
      ['part-a.txt', 'a'],
      ['part-b.txt', 'b'],
      ['part-c.txt', 'c'],
    ])
      expect(await git(remote.remote, 'show', `${tip}:${file}`)).toBe(content);

    // One copy of every step, no gaps, and the interruption is on the record.
    const events = await api<StoredEvent[]>(`/api/sessions/${id}/events?format=json`);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const ends = events.flatMap((e) => (e.event.type === 'tool-end' ? [e.event.callId] : []));
    expect(ends).toEqual(['call_work', 'call_more']);
    expect(events.filter((e) => e.event.type === 'branch-pushed')).toHaveLength(1);
    expect(events.some((e) => e.event.type === 'run-resumed')).toBe(true);

    // Reconnecting is attempts spread out, not a storm; and no warning or error line repeats
    // unthrottled (each message at most twice: the first, then one summary per 30 s).
    expect(refusedDuringOutage).toBeLessThan(2_000);
    const above = linesAboveInfo(server.lines().slice(outageFrom));
    const counts = new Map<string, number>();
    for (const line of above) counts.set(messageOf(line), (counts.get(messageOf(line)) ?? 0) + 1);
    expect([...counts].filter(([, n]) => n > 2)).toEqual([]);
    expect(server.child.exitCode).toBeNull();
  });
});

function messageOf(line: LogLine): string {
  return line.raw ?? String(line.msg);
}
