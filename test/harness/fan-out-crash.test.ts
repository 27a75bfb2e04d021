import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/sessions/store/session-store.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { createSessionOverApi } from '../helpers/server-process.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';

/**
 * The fan-out crash trial: `patchbay serve` killed with SIGKILL while its sub-tasks run. After the
 * restart every child resumes and the parent resumes once they have ended, with no child lost or
 * made twice and the spawn recorded once.
 */
describe('a server killed with SIGKILL during a fan-out', () => {
  let remote: RemoteFixture;
  let processes: ProcessesOnOneDatabase;
  let store: SessionStore;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('README.md', 'hello\n', 'first commit');
    processes = await startProcessesOnOneDatabase('patchbay-fanout-crash');
    store = processes.store!;
  });
  afterAll(async () => {
    await processes.close();
    await remote.cleanup();
  });

  it('resumes every child and then the parent, with no child lost or duplicated', { timeout: 240_000 }, async () => {
    // One script for every session. The parent fans out at its first turn; a child's first turn is
    // the same call, which it is refused (depth 1), then it runs the slow command and ends.
    const tasks = [
      { title: 'Part A', prompt: 'Write part A' },
      { title: 'Part B', prompt: 'Write part B' },
    ];
    const scenario = {
      turns: [
        { toolCalls: [{ id: 'call_fan', name: 'spawn_subtasks', input: { tasks } }] },
        {
          toolCalls: [{ id: 'call_slow', name: 'run_shell', input: { command: 'echo run >> runs.log; sleep 3' } }],
        },
        { text: 'Done here.' },
      ],
      verifier: [{ toolCalls: [{ name: 'record_verdict', input: passingVerdict }] }],
    };
    await processes.writeScenario(scenario);
    const env = {
      WORKER_CONCURRENCY: '3',
      QUEUE_HEARTBEAT_SECONDS: '10',
      QUEUE_MONITOR_SECONDS: '1',
      PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    };

    const first = await processes.serve('data', env);
    const id = await createSessionOverApi(first, {
      repo: remote.remote,
      prompt: 'Fan out',
      author: { name: 'Alice', email: 'a@example.com' },
    });

    // Killed once both children's commands are proven to run.
    const children = await waitFor(async () => {
      const found = await store.children(id);
      return found.length === 2 && found;
    }, 'the children');
    const running = (childId: string) =>
      readFile(join(processes.dataDir('data'), 'workspaces', childId, 'runs.log'), 'utf8').then(
        (text) => text === 'run\n',
        () => false,
      );
    await waitFor(
      async () => (await running(children[0]!.sessionId)) && (await running(children[1]!.sessionId)),
      "both children's commands to start",
      120_000,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    expect((await store.get(id))?.status).toBe('waiting');

    const second = await processes.serve('data', env);
    const done = await waitFor(
      async () => {
        const session = await store.get(id);
        return session && ['completed', 'failed'].includes(session.status) ? session : undefined;
      },
      'the parent to finish after the restart',
      180_000,
    );
    expect(done.status).toBe('completed');

    const after = await store.children(id);
    expect(after.map((c) => c.sessionId)).toEqual(children.map((c) => c.sessionId));
    expect(after.map((c) => c.status)).toEqual(['completed', 'completed']);
    const parentEvents = await store.events(id);
    const count = (type: string) => parentEvents.filter((e) => e.event.type === type).length;
    expect(count('subtasks-spawned')).toBe(1);
    expect(count('subtask-ended')).toBe(2);
    const fanEnd = parentEvents.find((e) => e.event.type === 'tool-end' && e.event.callId === 'call_fan');
    expect(fanEnd?.event.type === 'tool-end' && fanEnd.event.output).toContain('Sub-task 2 "Part B"');
    for (const child of after) {
      const events = await store.events(child.sessionId);
      expect(events.some((e) => e.event.type === 'run-resumed')).toBe(true);
      // The interrupted command ran again on the workspace put back before it: applied once.
      expect((await git(remote.remote, 'show', `${child.commit}:runs.log`)).split('\n')).toEqual(['run']);
    }
    second.child.kill('SIGTERM');
    await second.exited;
  });
});
