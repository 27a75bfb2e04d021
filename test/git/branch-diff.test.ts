import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { branchDiff } from '../../src/git/branch-diff.ts';
import { ensureMirror, withMirrorLock, mirrorPath, resolveRepo } from '../../src/git/mirror.ts';
import { createRemote, git, type RemoteFixture } from './git-fixture.ts';

describe('the diff of a pushed branch, read from the host mirror', () => {
  let remote: RemoteFixture;
  let dataDir: string;
  let base: string;
  let first: string;
  let head: string;

  beforeAll(async () => {
    remote = await createRemote();
    dataDir = await mkdtemp(join(tmpdir(), 'patchbay-diff-'));
    base = await remote.pushCommit('a.ts', 'const a = 1;\nconst b = 2;\n', 'base');
    await remote.pushCommit('old-name.md', 'same text\nline two\nline three\n', 'doc');
    base = await git(remote.remote, 'rev-parse', 'main');
    // The session branch: one commit edits and adds, the next renames and adds a binary file.
    const work = join(remote.root, 'work');
    await git(remote.root, 'clone', '--quiet', remote.remote, work);
    await git(work, 'checkout', '--quiet', '-b', 'patchbay/x');
    await writeFile(join(work, 'a.ts'), 'const a = 1;\nconst b = 3;\n');
    await writeFile(join(work, 'new.py'), 'print("hi")\n');
    await git(work, 'add', '-A');
    await git(
      work,
      '-c',
      'user.name=Ada',
      '-c',
      'user.email=ada@example.com',
      'commit',
      '--quiet',
      '-m',
      'Edit and add',
    );
    first = await git(work, 'rev-parse', 'HEAD');
    await git(work, 'mv', 'old-name.md', 'new-name.md');
    await writeFile(join(work, 'logo.bin'), Buffer.from([0, 1, 2, 0, 255]));
    await git(work, 'add', '-A');
    await git(
      work,
      '-c',
      'user.name=Ada',
      '-c',
      'user.email=ada@example.com',
      'commit',
      '--quiet',
      '-m',
      'Rename and add a binary',
    );
    head = await git(work, 'rev-parse', 'HEAD');
    await git(work, 'push', '--quiet', 'origin', 'patchbay/x');
    await withMirrorLock(mirrorPath(dataDir, resolveRepo(remote.remote)), () =>
      ensureMirror(remote.remote, { dataDir, log: pino({ level: 'silent' }), signal: AbortSignal.timeout(30_000) }),
    );
  });
  afterAll(async () => {
    await remote.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  const read = (options: { commit?: string; maxPatchBytes?: number; base?: string } = {}) =>
    branchDiff({
      repo: remote.remote,
      dataDir,
      base: options.base ?? base,
      head,
      signal: AbortSignal.timeout(30_000),
      ...options,
    });

  it('gives the whole change per file, with renames, binaries and the commits', async () => {
    const diff = await read();
    expect(diff?.commits.map((c) => [c.sha, c.subject, c.author])).toEqual([
      [head, 'Rename and add a binary', 'Upstream Dev'],
      [first, 'Edit and add', 'Upstream Dev'],
    ]);
    expect(diff?.files.map((f) => [f.path, f.oldPath, f.status, f.additions, f.deletions, f.binary])).toEqual([
      ['a.ts', undefined, 'modified', 1, 1, false],
      ['logo.bin', undefined, 'added', 0, 0, true],
      ['new-name.md', 'old-name.md', 'renamed', 0, 0, false],
      ['new.py', undefined, 'added', 1, 0, false],
    ]);
    expect(diff?.files[0]?.patch).toBe('@@ -1,2 +1,2 @@\n const a = 1;\n-const b = 2;\n+const b = 3;\n');
    expect(diff?.truncated).toBe(false);
  });

  it('gives one commit against its parent, and nothing for a commit not on the branch', async () => {
    const one = await read({ commit: first.slice(0, 12) });
    expect(one?.files.map((f) => f.path)).toEqual(['a.ts', 'new.py']);
    const two = await read({ commit: head });
    expect(two?.files.map((f) => [f.path, f.status])).toEqual([
      ['logo.bin', 'added'],
      ['new-name.md', 'renamed'],
    ]);
    expect(await read({ commit: 'f'.repeat(40) })).toBeUndefined();
    expect(await read({ base: 'e'.repeat(40) })).toBeUndefined();
    // Not a SHA: never reaches git as an option or a revision expression.
    expect(await read({ commit: '--output=/tmp/x' })).toBeUndefined();
  });

  it('leaves whole files out past the size limit and says so', async () => {
    const diff = await read({ maxPatchBytes: 300 });
    expect(diff?.truncated).toBe(true);
    expect(diff?.files.map((f) => f.path)).toEqual(['a.ts']);
  });
});
