import { lstat, mkdir, readdir, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isPatchbayError } from '../../src/core/errors.ts';
import { prepareSpareCheckout, prepareWorkspace, workspaceOriginUrl } from '../../src/git/prepare-workspace.ts';
import { createRemote, git, type RemoteFixture } from './git-fixture.ts';

const log = pino({ level: 'silent' });
const signal = (): AbortSignal => AbortSignal.timeout(30_000);

let fixture: RemoteFixture;
let dataDir: string;
beforeEach(async () => {
  fixture = await createRemote();
  dataDir = join(fixture.root, 'data');
});
afterEach(async () => {
  await fixture.cleanup();
});

function prepare(session: string, extra: { baseBranch?: string; branch?: string; repo?: string } = {}) {
  return prepareWorkspace({
    repo: extra.repo ?? fixture.remote,
    branch: extra.branch ?? `patchbay/${session}`,
    workspaceDir: join(dataDir, 'workspaces', session),
    dataDir,
    log,
    signal: signal(),
    ...(extra.baseBranch ? { baseBranch: extra.baseBranch } : {}),
  });
}

async function allFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe('prepareWorkspace', () => {
  it('clones from a bare mirror into the workspace and checks out the session branch', async () => {
    const mainCommit = await fixture.remoteBranch('main');
    const result = await prepare('s1');
    expect(result).toEqual({ baseBranch: 'main', baseCommit: mainCommit, reused: false });

    const ws = join(dataDir, 'workspaces', 's1');
    expect(await readFile(join(ws, 'README.md'), 'utf8')).toBe('# demo\n');
    expect(await git(ws, 'symbolic-ref', 'HEAD')).toBe('refs/heads/patchbay/s1');
    expect(await git(ws, 'rev-parse', 'HEAD')).toBe(mainCommit);
    expect(await git(ws, 'status', '--porcelain')).toBe('');
    expect(await git(ws, 'remote', 'get-url', 'origin')).toBe(workspaceOriginUrl);

    const mirrors = await readdir(join(dataDir, 'mirrors'));
    expect(mirrors).toHaveLength(1);
    expect(mirrors[0]).toMatch(/^[0-9a-f]{16}\.git$/);
    const mirror = join(dataDir, 'mirrors', mirrors[0]!);
    expect(await git(mirror, 'rev-parse', '--is-bare-repository')).toBe('true');
    // A bare clone, not --mirror: no fetch refspec that would make a push send every ref.
    await expect(git(mirror, 'config', '--get', 'remote.origin.mirror')).rejects.toThrow();

    // No object file of the workspace shares an inode with the mirror's.
    for (const file of await allFiles(join(ws, '.git', 'objects'))) {
      expect((await lstat(file)).nlink, file).toBe(1);
    }
  });

  it('reuses the mirror for a second session and fetches what was pushed meanwhile', async () => {
    const first = await prepare('s1');
    const newer = await fixture.pushCommit('CHANGELOG.md', 'v2\n', 'Second commit');
    const second = await prepare('s2');

    expect(second.baseCommit).toBe(newer);
    expect(first.baseCommit).not.toBe(newer);
    expect(await readdir(join(dataDir, 'mirrors'))).toHaveLength(1);
    // Separate checkouts: each session has its own files and branch.
    const ws1 = join(dataDir, 'workspaces', 's1');
    const ws2 = join(dataDir, 'workspaces', 's2');
    await writeFile(join(ws1, 'only-in-s1.txt'), 'x');
    await expect(lstat(join(ws2, 'only-in-s1.txt'))).rejects.toThrow();
    await expect(lstat(join(ws1, 'CHANGELOG.md'))).rejects.toThrow();
    expect(await readFile(join(ws2, 'CHANGELOG.md'), 'utf8')).toBe('v2\n');
    expect(await git(ws2, 'symbolic-ref', 'HEAD')).toBe('refs/heads/patchbay/s2');
    expect(await git(ws1, 'rev-parse', 'HEAD')).toBe(first.baseCommit);
  });

  it('serializes concurrent sessions on a repository not mirrored yet', async () => {
    const results = await Promise.all([prepare('a'), prepare('b'), prepare('c')]);
    expect(new Set(results.map((r) => r.baseCommit)).size).toBe(1);
    expect(await readdir(join(dataDir, 'mirrors'))).toHaveLength(1);
  });

  it('leaves a follow-up workspace as it is and reports the base it was made from', async () => {
    const first = await prepare('s1');
    const ws = join(dataDir, 'workspaces', 's1');
    await writeFile(join(ws, 'work-in-progress.txt'), 'keep me');
    await fixture.pushCommit('later.txt', 'later', 'Later upstream commit');

    const again = await prepare('s1');
    expect(again).toEqual({ baseBranch: 'main', baseCommit: first.baseCommit, reused: true });
    expect(await readFile(join(ws, 'work-in-progress.txt'), 'utf8')).toBe('keep me');
    expect(await git(ws, 'rev-parse', 'HEAD')).toBe(first.baseCommit);
  });

  it('does not follow a symlink the sandbox put in place of the base record', async () => {
    await prepare('s1');
    const ws = join(dataDir, 'workspaces', 's1');
    const decoy = join(fixture.root, 'decoy.json');
    await writeFile(decoy, JSON.stringify({ baseBranch: 'decoy', baseCommit: 'a'.repeat(40) }));
    await rm(join(ws, '.git', 'patchbay-base'));
    await symlink(decoy, join(ws, '.git', 'patchbay-base'));

    const again = await prepare('s1');
    expect(again.reused).toBe(true);
    expect(again.baseBranch).toBe('main');
    expect(again.baseCommit).toBe(await fixture.remoteBranch('main'));
  });

  it('starts from the given base branch', async () => {
    const developCommit = await fixture.pushCommit('dev.txt', 'dev', 'Develop work', 'develop');
    const result = await prepare('s1', { baseBranch: 'develop' });
    expect(result).toEqual({ baseBranch: 'develop', baseCommit: developCommit, reused: false });
    expect(await readFile(join(dataDir, 'workspaces', 's1', 'dev.txt'), 'utf8')).toBe('dev');
  });

  it('treats a relative path, the absolute path and a file:// URL of one repository as one mirror', async () => {
    await prepare('s1', { repo: relative(process.cwd(), fixture.remote) });
    await prepare('s2', { repo: `file://${fixture.remote}` });
    await prepare('s3', { repo: `${fixture.remote}/` });
    expect(await readdir(join(dataDir, 'mirrors'))).toHaveLength(1);
  });

  it('stops with aborted when the signal fires, leaving no half-made workspace', async () => {
    await prepare('warm');
    const controller = new AbortController();
    controller.abort();
    const error = await prepareWorkspace({
      repo: fixture.remote,
      branch: 'patchbay/s1',
      workspaceDir: join(dataDir, 'workspaces', 's1'),
      dataDir,
      log,
      signal: controller.signal,
    }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'aborted')).toBe(true);
    await expect(lstat(join(dataDir, 'workspaces', 's1', '.git'))).rejects.toThrow();
  });

  it('empties the workspace again when the clone fails part-way', async () => {
    // The clone succeeds; creating patchbay/s1 then fails because the base branch `patchbay` exists.
    await fixture.pushCommit('x.txt', 'x', 'Work', 'patchbay');
    const error = await prepare('s1', { baseBranch: 'patchbay' }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect(await readdir(join(dataDir, 'workspaces', 's1'))).toEqual([]);
  });

  it.each([
    [
      'a directory that is not a git repository',
      async (root: string) => {
        const dir = join(root, 'not-a-repo');
        await mkdir(dir);
        return dir;
      },
      /is not a git repository/,
    ],
    ['a path that does not exist', async (root: string) => join(root, 'missing'), /does not exist/],
  ])('fails with git_failed for %s', async (_name, makeRepo, pattern) => {
    const repo = await makeRepo(fixture.root);
    const error = await prepare('s1', { repo }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toMatch(pattern);
    await expect(lstat(join(dataDir, 'workspaces', 's1', '.git'))).rejects.toThrow();
  });

  it('fails for a base branch the repository does not have', async () => {
    const error = await prepare('s1', { baseBranch: 'nope' }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toMatch(/Branch nope does not exist/);
  });

  it('prepares again a workspace whose preparation a stopped server cut short, and leaves no marker', async () => {
    const mainCommit = await fixture.remoteBranch('main');
    const workspaces = join(dataDir, 'workspaces');
    // As a SIGKILL leaves it while the spare checkout's entries are moved in: files, no .git yet.
    await mkdir(join(workspaces, 's1'), { recursive: true });
    await writeFile(join(workspaces, 's1', 'README.md'), 'half');
    await writeFile(join(workspaces, 's1.preparing'), '');
    // And between the clone and the session branch: a .git on the base branch, no base record.
    await mkdir(join(workspaces, 's2'), { recursive: true });
    await git(fixture.root, 'clone', '--quiet', '--no-checkout', fixture.remote, join(workspaces, 's2'));
    await writeFile(join(workspaces, 's2.preparing'), '');

    for (const session of ['s1', 's2']) {
      expect(await prepare(session)).toEqual({ baseBranch: 'main', baseCommit: mainCommit, reused: false });
      const ws = join(workspaces, session);
      expect(await git(ws, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/patchbay/${session}`);
      expect(await readFile(join(ws, 'README.md'), 'utf8')).toBe('# demo\n');
      expect(JSON.parse(await readFile(join(ws, '.git', 'patchbay-base'), 'utf8'))).toEqual({
        baseBranch: 'main',
        baseCommit: mainCommit,
      });
    }
    await prepare('s3');
    expect((await readdir(workspaces)).sort()).toEqual(['s1', 's2', 's3']);
  });

  it('removes spares a killed process left half-made or half-taken, not one in the making', async () => {
    await prepare('s1');
    const spares = join(dataDir, 'spares');
    const hourAgo = new Date(Date.now() - 3_600_000);
    for (const name of ['m-1.partial-0badc0de', 'm-1.taken-12345678', 'm-1.partial-aaaaaaaa']) {
      await mkdir(join(spares, name), { recursive: true });
      await writeFile(join(spares, name, 'README.md'), 'x');
      if (!name.endsWith('aaaaaaaa')) await utimes(join(spares, name), hourAgo, hourAgo);
    }
    await prepareSpareCheckout({ repo: fixture.remote, baseBranch: 'main', dataDir, log });
    const left = await readdir(spares);
    expect(left.filter((name) => name.includes('.'))).toEqual(['m-1.partial-aaaaaaaa']);
    expect(left.filter((name) => !name.includes('.'))).toHaveLength(1);
  });

  it('keeps refusing what it refused: a refusal marks nothing to clear later', async () => {
    const ws = join(dataDir, 'workspaces', 's1');
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, 'stray.txt'), 'x');
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await prepare('s1').catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/not empty/);
    }
    expect(await readFile(join(ws, 'stray.txt'), 'utf8')).toBe('x');
  });

  it('refuses a non-empty workspace without .git, an invalid branch and the base as session branch', async () => {
    const ws = join(dataDir, 'workspaces', 's1');
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, 'stray.txt'), 'x');
    const notEmpty = await prepare('s1').catch((e: unknown) => e);
    expect(isPatchbayError(notEmpty, 'git_failed')).toBe(true);
    expect((notEmpty as Error).message).toMatch(/not empty/);

    const invalid = await prepare('s2', { branch: 'bad..name' }).catch((e: unknown) => e);
    expect(isPatchbayError(invalid, 'invalid_input')).toBe(true);
    const sameAsBase = await prepare('s3', { branch: 'main' }).catch((e: unknown) => e);
    expect(isPatchbayError(sameAsBase, 'invalid_input')).toBe(true);
  });
});
