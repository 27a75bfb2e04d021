import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/events.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { linesAboveInfo, serverApi, sessionEnded, type ServerProcess } from '../helpers/server-process.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';

/**
 * `patchbay serve` as a user runs it: environment only, its own embedded PostgreSQL under DATA_DIR.
 * The queue's own crash detection is set to ten minutes, so a run resumed within the test was taken
 * back by the restarted server itself.
 */
describe('patchbay serve on its embedded database, stopped and restarted mid-run', () => {
  let remote: RemoteFixture;
  let processes: ProcessesOnOneDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    remote = await createRemote();
    processes = await startProcessesOnOneDatabase('patchbay-restart', { database: 'embedded' });
    // The first command takes long only the first time it runs in a workspace.
    const scenario = {
      turns: [
        {
          toolCalls: [
            {
              id: 'call_slow',
              name: 'run_shell',
              input: {
                command:
                  'if [ -f .git/started ]; then echo again; else touch .git/started; sleep 60; fi; echo one > one.txt',
                timeout_seconds: 120,
              },
            },
          ],
        },
        { toolCalls: [{ id: 'call_write', name: 'write_file', input: { path: 'two.txt', content: 'two\n' } }] },
        { text: 'Done after the restart.' },
      ],
    };
    await processes.writeScenario(scenario);
    env = {
      QUEUE_HEARTBEAT_SECONDS: '600',
      QUEUE_MONITOR_SECONDS: '600',
      SHUTDOWN_GRACE_SECONDS: '1',
      PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    };
  });
  afterAll(async () => {
    await processes.close();
    await remote.cleanup();
  });

  const start = () => processes.serve('data', env);
  const startSession = async (server: ServerProcess) => {
    const { id } = await serverApi<{ id: string }>(server, '/api/sessions', {
      method: 'POST',
      body: JSON.stringify({
        repo: remote.remote,
        prompt: 'Survive a restart',
        author: { name: 'Alice', email: 'alice@example.com' },
      }),
    });
    // Proof that the slow command is running, not just asked for: its marker is in the workspace.
    await waitFor(
      () =>
        access(join(processes.dataDir('data'), 'workspaces', id, '.git', 'started')).then(
          () => true,
          () => false,
        ),
      'the slow command to start',
    );
    return id;
  };
  const finished = (server: ServerProcess, id: string) => sessionEnded(server, id, 180_000);
  const countTypes = (events: StoredEvent[]) => {
    const counts: Record<string, number> = {};
    for (const e of events) counts[e.event.type] = (counts[e.event.type] ?? 0) + 1;
    return counts;
  };
  const expectOneCopyOfEverything = async (server: ServerProcess, id: string) => {
    const events = await serverApi<StoredEvent[]>(server, `/api/sessions/${id}/events?format=json`);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(countTypes(events)).toEqual({
      'session-created': 1,
      'user-message': 1,
      'status-changed': 2,
      'workspace-ready': 1,
      'run-resumed': 1,
      usage: 3,
      'tool-start': 2,
      'tool-end': 2,
      'assistant-message': 1,
      'diff-updated': 1,
      'branch-pushed': 1,
      // The harness's gates: routed once, knowledge loaded by each run, one verdict and one gate.
      'task-routed': 1,
      // The autonomy the run works under, recorded once (it did not change on the resume).
      'autonomy-set': 1,
      'knowledge-loaded': 2,
      'verification-finished': 1,
      'review-gate': 1,
    });
    // The interrupted command has one result, from its second execution: it was not recorded as a failure.
    const ends = events.flatMap((e) => (e.event.type === 'tool-end' ? [e.event] : []));
    expect(ends.map((e) => [e.callId, e.isError, e.output.trim().split('\n').at(-1)])).toEqual([
      ['call_slow', false, 'again'],
      ['call_write', false, expect.any(String)],
    ]);
    return events;
  };

  it('on SIGTERM exits 0 with nothing above info, hands the run back, and the next start resumes it', {
    timeout: 400_000,
  }, async () => {
    const first = await start();
    const id = await startSession(first);
    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    const shutdown = first.lines().slice(first.lines().findIndex((l) => l.msg?.startsWith('shutting down')));
    expect(linesAboveInfo(shutdown)).toEqual([]);
    expect(shutdown.some((l) => l.msg === 'interrupting runs; the queue hands them to the next worker')).toBe(true);

    const second = await start();
    const done = await finished(second, id);
    expect(done.status).toBe('completed');
    expect(done.result?.summary).toBe('Done after the restart.');
    await expectOneCopyOfEverything(second, id);
    const tip = await remote.remoteBranch(done.branch!);
    expect(await git(remote.remote, 'show', `${tip}:one.txt`)).toBe('one');
    expect(await git(remote.remote, 'show', `${tip}:two.txt`)).toBe('two');

    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
  });

  it('after SIGKILL, the restarted server takes the run back at once and marks it resumed', {
    timeout: 400_000,
  }, async () => {
    const first = await start();
    const id = await startSession(first);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await start();
    await second.waitForLine((l) => l.msg === 'took back runs of a server that stopped without finishing them');
    const done = await finished(second, id);
    expect(done.status).toBe('completed');
    await expectOneCopyOfEverything(second, id);
    expect(second.lines().some((l) => l.msg === 'run was interrupted and is resumed' && l.sessionId === id)).toBe(true);

    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    // Taking over the dead server's database (within its grace, before its lifeline stops it) is
    // worth a warning; nothing else is. And the database taken over is stopped with the server
    // that took it: nothing of it is left running.
    expect(linesAboveInfo(second.lines()).map((l) => l.msg)).toEqual([
      'taking over the PostgreSQL an earlier process left running',
    ]);
    const pidFile = join(processes.dataDir('data'), 'postgres', 'postmaster.pid');
    await expect(access(pidFile)).rejects.toThrow();
  });
});
