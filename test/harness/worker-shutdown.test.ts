import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

describe('a worker shut down mid-run', () => {
  let remote: RemoteFixture;
  let first: PatchbayFixture | undefined;
  let second: Patchbay | undefined;

  beforeAll(async () => {
    remote = await createRemote();
  });
  afterAll(async () => {
    await second?.close();
    await first?.dispose();
    await remote.cleanup();
  });

  it('leaves the session to another worker instead of cancelling it', { timeout: 90_000 }, async () => {
    const turns = (messages: readonly ModelMessage[]) => messages.filter((m) => m.role === 'assistant').length;
    const model = createScriptedProvider({
      scenario: (messages) =>
        turns(messages) === 0
          ? {
              toolCalls: [
                {
                  name: 'run_shell',
                  input: {
                    command: 'if [ -f .git/first-run ]; then echo resumed; else touch .git/first-run; sleep 60; fi',
                    timeout_seconds: 120,
                  },
                },
              ],
            }
          : { text: 'Finished on the second worker.' },
    });
    first = await startTestPatchbay({ model });
    const started = await first.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Take a while',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    await waitFor(
      async () => (await first!.store.events(id, { types: ['tool-start'] })).length > 0,
      'the shell call to start',
    );

    // A deploy: this worker's queue stops, and after its grace period its job is aborted. The
    // interrupted call gets no result, so the next worker runs it again.
    await first.queue.stop();
    expect((await first.store.get(id))?.status).toBe('running');

    // Another process on the same database picks the run up and finishes it.
    second = await startPatchbay(first.config, {
      log: pino({ level: 'silent' }),
      work: true,
      model,
      queue: { pollingIntervalSeconds: 0.5 },
    });
    const done = await waitForStatus(second, id, ['completed', 'failed', 'cancelled'], 45_000);
    expect(done.status).toBe('completed');
    expect(done.result?.summary).toBe('Finished on the second worker.');
    const changes = (await second.store.events(id, { types: ['status-changed'] })).map((e) => e.event);
    expect(changes.some((c) => c.type === 'status-changed' && c.to === 'cancelled')).toBe(false);
    const ends = (await second.store.events(id, { types: ['tool-end'] })).map((e) => e.event);
    expect(ends).toMatchObject([{ type: 'tool-end', isError: false, output: expect.stringContaining('resumed') }]);
    expect(await second.store.events(id, { types: ['run-resumed'] })).toHaveLength(1);
  });
});
