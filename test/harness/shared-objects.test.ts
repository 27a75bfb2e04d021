import { execFile } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_OBJECTS_PATH } from '../../sandbox/sandbox.ts';
import type { Actor } from '../../src/core/actor.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const run = promisify(execFile);

/**
 * A session's workspace borrows its history from the host's mirror (a `--shared` clone whose
 * alternates point at the mirror's objects, shown read-only in the sandbox) instead of copying it:
 * a session on a large, mirrored repository writes only its checkout. Git inside the sandbox must
 * still see the whole history (log, diff against the base, the bundle the push is made from).
 */
describe("a workspace sharing the mirror's objects", () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    remote = await createRemote();
    for (let i = 0; i < 20; i++) await remote.pushCommit(`history-${i}.txt`, `commit ${i}\n`, `History ${i}`);
    app = await startTestPatchbay({
      model: createScriptedProvider({
        scenario: [
          {
            toolCalls: [
              {
                name: 'run_shell',
                input: { command: 'git log --oneline | wc -l > COUNT.txt; git show HEAD~20:README.md >> COUNT.txt' },
              },
            ],
          },
          { toolCalls: [{ name: 'write_file', input: { path: 'NEW.md', content: 'new\n' } }] },
          { text: 'Counted the history and wrote NEW.md.' },
        ],
      }),
      env: { PATCHBAY_ALLOW_LOCAL_REPOS: 'true' },
    });
  });
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
  });

  it('holds no copy of the history, and git in the sandbox sees all of it', { timeout: 120_000 }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Count the history',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed'], 90_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');

    const workspace = join(app.dataDir, 'workspaces', done.id);
    expect(await readFile(join(workspace, '.git', 'objects', 'info', 'alternates'), 'utf8')).toBe(
      `${SHARED_OBJECTS_PATH}\n`,
    );
    // The workspace's own object store lacks the upstream history: on the host (where the
    // alternates path does not exist) the first upstream commit cannot be read from it.
    const first = await git(remote.remote, 'rev-list', '--max-parents=0', 'main');
    const own = await run('git', ['--git-dir', join(workspace, '.git'), 'cat-file', '-e', `${first}^{commit}`]).then(
      () => 'present',
      () => 'absent',
    );
    expect(own).toBe('absent');

    const tip = await remote.remoteBranch(done.branch!);
    expect(await git(remote.remote, 'show', `${tip}:COUNT.txt`)).toBe('21\n# demo');
    expect(await git(remote.remote, 'show', `${tip}:NEW.md`)).toBe('new');

    // When the run ended, a spare checkout of the base was made; the next session takes it over
    // (its files moved in, not written again) and works as any other.
    // (Made after the run's end is recorded: wait for it.)
    const spares = await waitFor(
      async () => {
        const entries = await readdir(join(app.dataDir, 'spares')).catch(() => [] as string[]);
        return entries.length === 1 && !entries[0]!.includes('.partial-') ? entries : undefined;
      },
      'the spare checkout',
      30_000,
    );
    const spareReadme = await stat(join(app.dataDir, 'spares', spares[0]!, 'README.md'));
    const second = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Count the history again',
      repo: remote.remote,
    });
    if (second.kind !== 'started') throw new Error(second.kind);
    const again = await waitForStatus(app, second.session.id, ['completed', 'failed'], 90_000);
    expect(again.error).toBeNull();
    expect(again.status).toBe('completed');
    const taken = await stat(join(app.dataDir, 'workspaces', again.id, 'README.md'));
    // Moved in (the same inode), or, into a workspace that is a file system of its own (as root), copied.
    if (taken.dev === spareReadme.dev) expect(taken.ino).toBe(spareReadme.ino);
    else expect(taken.size).toBe(spareReadme.size);
    const secondTip = await remote.remoteBranch(again.branch!);
    expect(await git(remote.remote, 'show', `${secondTip}:COUNT.txt`)).toBe('21\n# demo');
    expect(await git(remote.remote, 'log', '--format=%s', `${secondTip}`, '-1')).toBe('Count the history again');
  });
});
