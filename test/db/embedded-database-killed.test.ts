import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/events.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { serverApi, sessionEnded, type ServerProcess } from '../helpers/server-process.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';

/**
 * `patchbay serve` whose embedded PostgreSQL is killed mid-run: the server starts it again and the
 * run carries on, once. The queue's crash detection is set to ten minutes, so whatever happens
 * within the test is the server's own doing.
 */
describe('patchbay serve when its embedded database is killed mid-run', () => {
  let remote: RemoteFixture;
  let processes: ProcessesOnOneDatabase;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    processes = await startProcessesOnOneDatabase('patchbay-db-killed', { database: 'embedded' });
    // The command writes, waits until the test has seen the database come back (its marker), then
    // takes 5 s more: a second run of the session, if the queue handed one out (1 s after the
    // restart), starts while this one is still in its command.
    const scenario = {
      turns: [
        {
          toolCalls: [
            {
              id: 'call_work',
              name: 'run_shell',
              input: {
                command:
                  'echo a > part-a.txt; while [ ! -f .git/back ]; do sleep 0.1; done; sleep 5; echo b > part-b.txt',
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
    await remote.cleanup();
  });

  const api = <T>(path: string) => serverApi<T>(server!, path);

  it('starts it again, and the run carries on once, with one copy of every step', { timeout: 300_000 }, async () => {
    const dataDir = processes.dataDir('data');
    server = await processes.serve('data', {
      QUEUE_HEARTBEAT_SECONDS: '600',
      QUEUE_MONITOR_SECONDS: '600',
      PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    });
    const { id } = await serverApi<{ id: string }>(server, '/api/sessions', {
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

    const postmaster = Number((await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(postmaster, 'SIGKILL');
    await server.waitForLine((l) => l.msg === 'embedded PostgreSQL is back', 120_000);
    // The server's own look for cut-off runs (after the restart) has had its turn: it logs either way.
    await server.waitForLine(
      (l) =>
        l.msg === 'took back runs cut off by the database restart' ||
        l.msg === 'looked for runs cut off by the database restart: none',
      60_000,
    );
    await writeFile(join(workspace, '.git', 'back'), '');

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

    // The run that was running carried on; no second run of the session was started beside it.
    const events = await api<StoredEvent[]>(`/api/sessions/${id}/events?format=json`);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const count = (type: string) => events.filter((e) => e.event.type === type).length;
    expect(events.flatMap((e) => (e.event.type === 'tool-start' ? [e.event.callId] : []))).toEqual([
      'call_work',
      'call_more',
    ]);
    expect(events.flatMap((e) => (e.event.type === 'tool-end' ? [e.event.callId] : []))).toEqual([
      'call_work',
      'call_more',
    ]);
    expect([
      count('knowledge-loaded'),
      count('verification-finished'),
      count('branch-pushed'),
      count('run-resumed'),
    ]).toEqual([1, 1, 1, 0]);
  });
});
