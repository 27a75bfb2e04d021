import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { matchesBranchPattern } from '../../src/git/push-branch.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

describe('push policy, configured from the environment', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('r.txt', 'release\n', 'release line', 'release/1.x');
    await remote.pushCommit('d.txt', 'develop\n', 'develop line', 'develop');
  });
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });
  afterAll(() => remote.cleanup());

  const writingModel = () =>
    createScriptedProvider({
      scenario: [
        { toolCalls: [{ name: 'write_file', input: { path: 'agent.txt', content: 'changed\n' } }] },
        { text: 'Wrote agent.txt.' },
      ],
    });

  // A session asked to work on an existing branch (a pull request's head) that the operator
  // protected: the harness refuses the push and the session says why. (A session whose branch is
  // its base is refused earlier, when the workspace is prepared.)
  it('refuses to push a branch PROTECTED_BRANCHES names and fails the session with the reason', async () => {
    const branch = 'release/1.x';
    const baseBranch = 'main';
    const reason = /protected branch release\/1\.x: it matches PROTECTED_BRANCHES entry release\/\*/;
    app = await startTestPatchbay({ model: writingModel(), env: { PROTECTED_BRANCHES: 'hotfix, release/*' } });
    const before = await remote.remoteBranch(branch);
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Change something',
      repo: remote.remote,
      baseBranch,
      branch,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const session = await waitForStatus(app, started.session.id, ['completed', 'failed']);
    expect(session.status).toBe('failed');
    expect(session.error).toMatch(reason);
    const errors = (await app.store.events(session.id, { types: ['error'] })).map((e) => e.event);
    expect(errors).toEqual([
      expect.objectContaining({ type: 'error', code: 'invalid_input', message: expect.stringMatching(reason) }),
    ]);
    expect(await remote.remoteBranch(branch)).toBe(before);
    expect(await git(remote.remote, 'log', '--format=%s', '-1', branch)).not.toBe('Change something');
  });

  it('matches PROTECTED_BRANCHES patterns literally except for *', () => {
    const table: Array<[string, string, boolean]> = [
      ['release/1.x', 'release/*', true],
      ['release', 'release/*', false],
      ['hotfix', 'hotfix', true],
      ['hotfixes', 'hotfix', false],
      ['a.b', 'a.b', true],
      ['axb', 'a.b', false],
      ['team/x/y', '*/y', true],
    ];
    for (const [branch, pattern, expected] of table)
      expect(matchesBranchPattern(branch, pattern), `${branch} ~ ${pattern}`).toBe(expected);
  });
});
