import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/sessions/store/session-store.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { createSessionOverApi } from '../helpers/server-process.ts';
import { startProcessesOnOneDatabase, type ProcessesOnOneDatabase } from '../helpers/processes-on-one-database.ts';

describe('a worker killed with SIGKILL mid-run', () => {
  let remote: RemoteFixture;
  let processes: ProcessesOnOneDatabase;
  let store: SessionStore;

  beforeAll(async () => {
    remote = await createRemote();
    processes = await startProcessesOnOneDatabase('patchbay-crash');
    store = processes.store!;
  });
  afterAll(async () => {
    await processes.close();
    await remote.cleanup();
  });

  it('resumes after a restart and finishes with one copy of each event', { timeout: 120_000 }, async () => {
    const scenario = {
      turns: [
        {
          text: 'Running the slow step.',
          toolCalls: [
            {
              id: 'call_slow',
              name: 'run_shell',
              input: { command: 'echo run >> runs.log; sleep 3; echo slow step done' },
            },
          ],
        },
        {
          toolCalls: [
            { id: 'call_write', name: 'write_file', input: { path: 'RESULT.md', content: 'survived a crash\n' } },
          ],
        },
        { text: 'Finished after the restart.' },
      ],
      verifier: [{ toolCalls: [{ name: 'record_verdict', input: passingVerdict }] }],
    };
    await processes.writeScenario(scenario);
    const env = {
      QUEUE_HEARTBEAT_SECONDS: '10',
      QUEUE_MONITOR_SECONDS: '1',
      // The repository is a directory on this machine, which the API takes only when allowed.
      PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    };

    const first = await processes.serve('data', env);
    const id = await createSessionOverApi(first, {
      repo: remote.remote,
      prompt: 'Survive a crash',
      author: { name: 'Alice', email: 'alice@example.com' },
    });

    // Killed only once the command is proven to run: its first line is in the workspace.
    const runsLog = join(processes.dataDir('data'), 'workspaces', id, 'runs.log');
    await waitFor(
      () =>
        readFile(runsLog, 'utf8').then(
          (text) => text === 'run\n',
          () => false,
        ),
      'the slow command to start',
    );
    first.child.kill('SIGKILL');
    await first.exited;
    expect((await store.get(id))?.status).toBe('running');

    const second = await processes.serve('data', env);
    const done = await waitFor(
      async () => {
        const session = await store.get(id);
        return session && ['completed', 'failed'].includes(session.status) ? session : undefined;
      },
      'the session to finish after the restart',
      90_000,
    );
    expect(done.status).toBe('completed');
    expect(done.result?.summary).toBe('Finished after the restart.');

    const events = await store.events(id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const counts: Record<string, number> = {};
    for (const e of events) counts[e.event.type] = (counts[e.event.type] ?? 0) + 1;
    expect(counts).toEqual({
      'session-created': 1,
      'user-message': 1,
      'status-changed': 2,
      'workspace-ready': 1,
      'run-resumed': 1,
      'tool-start': 2,
      'tool-end': 2,
      'assistant-message': 2,
      usage: 4, // three agent turns and the verifier's
      // Each run loads the knowledge document; routing is decided once; the commit is verified and gated.
      'knowledge-loaded': 2,
      'task-routed': 1,
      // The autonomy the run works under, recorded once (it did not change on the resume).
      'autonomy-set': 1,
      'verification-finished': 1,
      'review-gate': 1,
      'diff-updated': 1,
      'branch-pushed': 1,
    });
    expect(
      events
        .filter((e) => e.event.type === 'verification-finished')
        .map((e) => e.event.type === 'verification-finished' && e.event.outcome),
    ).toEqual(['passed']);
    const transcript = await store.transcript(id);
    expect(
      transcript.filter((m) => m.message.role === 'tool').map((m) => m.message.role === 'tool' && m.message.toolCallId),
    ).toEqual(['call_slow', 'call_write']);

    // The interrupted command ran again after the restart, on the workspace as it was before the
    // call (restored from the checkpoint taken before it): applied once, its result recorded once.
    const tip = await remote.remoteBranch(done.branch!);
    expect(await git(remote.remote, 'show', `${tip}:RESULT.md`)).toBe('survived a crash');
    expect((await git(remote.remote, 'show', `${tip}:runs.log`)).split('\n')).toEqual(['run']);
    second.child.kill('SIGTERM');
    await second.exited;
  });
});
