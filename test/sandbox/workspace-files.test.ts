import { mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
import { toWorkspaceRelative } from '../../sandbox/workspace-path.ts';
import { makeProvider, makeTempDir } from './sandbox-test-helpers.ts';

describe('toWorkspaceRelative', () => {
  const accepted: Array<[string, string]> = [
    ['src/a.ts', 'src/a.ts'],
    ['./src/a.ts', 'src/a.ts'],
    ['src/../lib/b.ts', 'lib/b.ts'],
    ['/workspace/src/a.ts', 'src/a.ts'],
    ['/workspace', '.'],
    ['/workspace/', '.'],
    ['', '.'],
    ['.', '.'],
    ['dir/', 'dir'],
  ];
  for (const [input, expected] of accepted) {
    it(`accepts ${JSON.stringify(input)} as ${JSON.stringify(expected)}`, () => {
      expect(toWorkspaceRelative(input, '/workspace')).toBe(expected);
    });
  }
  const refused = ['..', '../x', 'a/../../x', '/etc/passwd', '/workspace/../etc/passwd', '/workspacex/a', '/', 'a\0b'];
  for (const input of refused) {
    it(`refuses ${JSON.stringify(input)}`, () => {
      expect(() => toWorkspaceRelative(input, '/workspace')).toThrow(expect.objectContaining({ code: 'path_refused' }));
    });
  }
});

describe('sandbox file operations', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  let outsideDir: string;
  let outsideFile: string;
  let sandbox: Sandbox;
  let root: string;

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider());
    outsideDir = await makeTempDir('files-outside');
    outsideFile = path.join(outsideDir, 'host.txt');
    await writeFile(outsideFile, 'host content');
    sandbox = await provider.acquire('files', { network: 'none' });
    root = provider.hostPath('files');
    await symlink(outsideFile, path.join(root, 'link-to-outside-file'));
    await symlink(outsideDir, path.join(root, 'link-to-outside-dir'));
    await symlink(path.join(outsideDir, 'not-yet.txt'), path.join(root, 'dangling-outside'));
    await symlink('/root', path.join(root, 'link-to-root'));
  });
  afterAll(async () => {
    await sandbox.release();
    await cleanup();
    await rm(outsideDir, { recursive: true, force: true });
  });

  it('writes with parent directories and reads back, relative or under /workspace', async () => {
    await sandbox.writeFile('deep/nested/file.txt', 'hello');
    expect(await readFile(path.join(root, 'deep/nested/file.txt'), 'utf8')).toBe('hello');
    expect(await sandbox.readFile('/workspace/deep/nested/file.txt')).toBe('hello');
    await sandbox.writeFile('/workspace/deep/nested/file.txt', 'replaced');
    expect(await sandbox.readFile('./deep/nested/file.txt')).toBe('replaced');
    const seenInside = await sandbox.exec('cat deep/nested/file.txt');
    expect(seenInside.stdout).toBe('replaced');
  });

  it('refuses to read a file too large to hold in memory whole, and says how to read it instead', async () => {
    const made = await sandbox.exec('head -c 17000000 /dev/zero > big.bin && echo ok');
    expect(made.stdout.trim()).toBe('ok');
    await expect(sandbox.readFile('big.bin')).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/16\.2 MiB, over the 16 MiB.*head, sed -n, grep/),
    });
    await sandbox.exec('head -c 1000 /dev/zero | tr "\\0" x > small.bin');
    expect(await sandbox.readFile('small.bin')).toBe('x'.repeat(1000));
  });

  it('reports a missing file as not_found and a directory as invalid input', async () => {
    await expect(sandbox.readFile('nope.txt')).rejects.toMatchObject({ code: 'not_found' });
    await sandbox.writeFile('adir/x', '');
    await expect(sandbox.readFile('adir')).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(sandbox.writeFile('adir', 'x')).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(sandbox.writeFile('adir/x/under-a-file', 'x')).rejects.toMatchObject({ code: 'invalid_input' });
  });

  it('refuses lexical escapes with a clear message', async () => {
    for (const p of ['../escape.txt', '/etc/passwd', '/workspace/../etc/passwd', 'a/../../x']) {
      await expect(sandbox.readFile(p)).rejects.toMatchObject({
        code: 'path_refused',
        message: expect.stringContaining('path refused'),
      });
      await expect(sandbox.writeFile(p, 'x')).rejects.toMatchObject({ code: 'path_refused' });
      await expect(sandbox.listFiles(p)).rejects.toMatchObject({ code: 'path_refused' });
    }
    await expect(stat(path.join(path.dirname(root), 'escape.txt'))).rejects.toThrow();
  });

  it('refuses reading through symlinks that point outside', async () => {
    await expect(sandbox.readFile('link-to-outside-file')).rejects.toMatchObject({ code: 'path_refused' });
    await expect(sandbox.readFile('link-to-outside-dir/host.txt')).rejects.toMatchObject({ code: 'path_refused' });
    await expect(sandbox.listFiles('link-to-outside-dir')).rejects.toMatchObject({ code: 'path_refused' });
    await expect(sandbox.listFiles('link-to-root')).rejects.toMatchObject({ code: 'path_refused' });
    await expect(sandbox.exec('pwd', { cwd: 'link-to-outside-dir' })).rejects.toMatchObject({ code: 'path_refused' });
  });

  it('refuses writing through symlinks that point outside, leaving the host untouched', async () => {
    await expect(sandbox.writeFile('link-to-outside-file', 'overwritten')).rejects.toMatchObject({
      code: 'path_refused',
    });
    expect(await readFile(outsideFile, 'utf8')).toBe('host content');
    await expect(sandbox.writeFile('link-to-outside-dir/new.txt', 'x')).rejects.toMatchObject({ code: 'path_refused' });
    await expect(sandbox.writeFile('link-to-outside-dir/sub/new.txt', 'x')).rejects.toMatchObject({
      code: 'path_refused',
    });
    await expect(stat(path.join(outsideDir, 'new.txt'))).rejects.toThrow();
    await expect(stat(path.join(outsideDir, 'sub'))).rejects.toThrow();
    await expect(sandbox.writeFile('dangling-outside', 'x')).rejects.toMatchObject({ code: 'path_refused' });
    await expect(stat(path.join(outsideDir, 'not-yet.txt'))).rejects.toThrow();
  });

  it('follows symlinks that stay inside the workspace', async () => {
    await sandbox.writeFile('real/target.txt', 'inside');
    await symlink('real/target.txt', path.join(root, 'inner-link'));
    await symlink('real', path.join(root, 'inner-dir-link'));
    expect(await sandbox.readFile('inner-link')).toBe('inside');
    await sandbox.writeFile('inner-dir-link/through.txt', 'via link');
    expect(await readFile(path.join(root, 'real/through.txt'), 'utf8')).toBe('via link');
    await sandbox.writeFile('inner-link', 'updated');
    expect(await readFile(path.join(root, 'real/target.txt'), 'utf8')).toBe('updated');
  });

  it('lists sorted entries, recursively on request, without .git internals or following symlinks', async () => {
    const other = await provider.acquire('listing', { network: 'none' });
    const r = provider.hostPath('listing');
    await other.writeFile('b.txt', '12345');
    await other.writeFile('a/z.txt', 'z');
    await other.writeFile('a/y/x.txt', 'xx');
    await mkdir(path.join(r, '.git/objects'), { recursive: true });
    await writeFile(path.join(r, '.git/HEAD'), 'ref: refs/heads/main\n');
    await symlink(outsideDir, path.join(r, 'out'));

    const top = await other.listFiles('.');
    expect(top.map((e) => [e.path, e.type])).toEqual([
      ['.git', 'dir'],
      ['a', 'dir'],
      ['b.txt', 'file'],
      ['out', 'symlink'],
    ]);
    expect(top.find((e) => e.path === 'b.txt')?.size).toBe(5);

    const all = await other.listFiles('/workspace', { recursive: true });
    expect(all.map((e) => e.path)).toEqual(['.git', 'a', 'a/y', 'a/y/x.txt', 'a/z.txt', 'b.txt', 'out']);

    const sub = await other.listFiles('a', { recursive: true });
    expect(sub.map((e) => e.path)).toEqual(['a/y', 'a/y/x.txt', 'a/z.txt']);

    const limited = await other.listFiles('', { recursive: true, limit: 3 });
    expect(limited).toHaveLength(3);
    expect(limited.map((e) => e.path)).toEqual(['.git', 'a', 'a/y']);
    await other.destroy();
  });
});
