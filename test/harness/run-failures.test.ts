import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

describe('a run that cannot get its sandbox', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    remote = await createRemote();
    app = await startTestPatchbay({ model: createScriptedProvider({ scenario: [{ text: 'should not run' }] }) });
  });
  afterAll(async () => {
    await app.dispose();
    await remote.cleanup();
  });

  it('ends failed with the reason instead of staying running', async () => {
    const id = randomUUID();
    await app.store.create({
      id,
      repo: remote.remote,
      prompt: 'Do it',
      title: 'Do it',
      requester: alice,
      thread: { source: 'web' },
    });
    // A file where the session's workspace directory has to go: the sandbox cannot be created.
    await mkdir(join(app.dataDir, 'workspaces'), { recursive: true });
    await writeFile(join(app.dataDir, 'workspaces', id), 'in the way\n');
    await app.queue.enqueue(id);

    const done = await waitForStatus(app, id, ['failed', 'completed', 'cancelled'], 20_000);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/could not create workspace/);
    const errors = (await app.store.events(id, { types: ['error'] })).map((e) => e.event);
    expect(errors).toEqual([expect.objectContaining({ type: 'error', code: 'sandbox_failed' })]);
  });
});
