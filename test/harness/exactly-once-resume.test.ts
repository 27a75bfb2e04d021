import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandboxProvider, type LocalSandboxProvider } from '../../sandbox/index.ts';
import { createDefaultTools } from '../../src/agent/default-tools.ts';
import { createToolRegistry } from '../../src/agent/tool-registry.ts';
import type { Actor } from '../../src/core/actor.ts';
import type { RunLog } from '../../src/core/run-log.ts';
import { runSession } from '../../src/harness/run-session.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createCheckpointStore } from '../../src/sessions/harness-stores/pg-checkpoint-store.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/**
 * A worker killed after a tool call ran and before its result was recorded, then the session
 * resumed on the same workspace (the same worker restarted): the call must not be applied twice.
 * The kill is exact: the write of the call's result is where the process dies (it never lands and
 * nothing after it runs). The real harness, runner and tools, a real bubblewrap sandbox, the real
 * stores on PostgreSQL and a real git remote; the command appends a line to a file, so applying
 * it twice shows as two lines on the pushed branch.
 */
describe('a kill between a tool call and its recorded result', () => {
  let remote: RemoteFixture;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  let dataDir: string;
  let sandboxes: LocalSandboxProvider;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('README.md', 'readme\n', 'Add a README');
    database = await createTestDatabase();
    store = createSessionStore(database.db);
    dataDir = await mkdtemp(join(tmpdir(), 'patchbay-once-'));
    sandboxes = await createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'bwrap' });
  });
  afterAll(async () => {
    await database?.close();
    await remote?.cleanup();
    await removeDataDir(dataDir);
  });

  /** The run log of a process that dies as it writes the result of `callId`. */
  function dyingAt(callId: string, controller: AbortController): RunLog {
    return {
      ...store,
      async commitStep(sessionId, step) {
        if (step.events?.some((e) => e.event.type === 'tool-end' && e.event.callId === callId)) {
          controller.abort(new Error('killed'));
          throw new Error('the process was killed here');
        }
        return store.commitStep(sessionId, step);
      },
    };
  }

  async function killAndResume(turns: object[], callId: string, maxBytes = 64 * 1024 * 1024) {
    const id = randomUUID();
    await store.create({
      id,
      repo: remote.remote,
      prompt: 'Log progress',
      title: 'Log progress',
      requester: alice,
      thread: { source: 'web' },
    });
    const model = createScriptedProvider({ scenario: turns as never });
    const deps = {
      sandboxes,
      model,
      tools: createToolRegistry(createDefaultTools()),
      dataDir,
      network: 'none' as const,
      log,
      checkpoints: { store: createCheckpointStore(database.db), maxBytes },
    };
    const killed = new AbortController();
    await runSession(id, { ...deps, store: dyingAt(callId, killed) }, killed.signal);
    expect((await store.get(id))?.status).toBe('running');
    await runSession(id, { ...deps, store }, AbortSignal.timeout(120_000));
    const session = (await store.get(id))!;
    expect(session.status, session.error ?? '').toBe('completed');
    const tip = await remote.remoteBranch(session.branch!);
    return {
      id,
      progress: (await git(remote.remote, 'show', `${tip}:progress.log`)).split('\n'),
      events: await store.events(id),
    };
  }

  it('runs the call again on the workspace as it was before the call, restored from the checkpoint before it', {
    timeout: 120_000,
  }, async () => {
    const { progress, events } = await killAndResume(
      [
        { toolCalls: [{ id: 'call_first', name: 'write_file', input: { path: 'A.md', content: 'alpha\n' } }] },
        { toolCalls: [{ id: 'call_append', name: 'run_shell', input: { command: 'echo one >> progress.log' } }] },
        { text: 'Logged.' },
      ],
      'call_append',
    );
    expect(progress).toEqual(['one']);
    expect(events.flatMap((e) => (e.event.type === 'tool-end' ? [e.event.callId] : []))).toEqual([
      'call_first',
      'call_append',
    ]);
  });

  it('also when the call was the first to change files (no checkpoint of earlier work)', {
    timeout: 120_000,
  }, async () => {
    const { progress } = await killAndResume(
      [
        { toolCalls: [{ id: 'call_append', name: 'run_shell', input: { command: 'echo one >> progress.log' } }] },
        { text: 'Logged.' },
      ],
      'call_append',
    );
    expect(progress).toEqual(['one']);
  });

  it('reports the call to the model as interrupted when the workspace cannot be put back', {
    timeout: 120_000,
  }, async () => {
    // Checkpoints too large to store: nothing can put the workspace back to before the call.
    const { progress, events } = await killAndResume(
      [
        { toolCalls: [{ id: 'call_append', name: 'run_shell', input: { command: 'echo one >> progress.log' } }] },
        { text: 'Logged.' },
      ],
      'call_append',
      1,
    );
    expect(progress).toEqual(['one']);
    const ends = events.flatMap((e) => (e.event.type === 'tool-end' ? [e.event] : []));
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({
      callId: 'call_append',
      isError: true,
      output: expect.stringMatching(/^This call was interrupted/),
    });
  });
});
