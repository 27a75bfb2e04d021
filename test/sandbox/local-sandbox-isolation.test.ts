import { mkdir, stat, writeFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/index.ts';
import { makeProvider, makeTempDir } from './sandbox-test-helpers.ts';

describe('local bubblewrap sandbox isolation', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  let outsideDir: string;

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider());
    outsideDir = await makeTempDir('outside');
    await writeFile(path.join(outsideDir, 'secret.txt'), 'outside-secret-content');
  });
  afterAll(async () => {
    await cleanup();
    await rm(outsideDir, { recursive: true, force: true });
  });

  it('hides host environment variables and passes only the given ones', async () => {
    process.env.PATCHBAY_TEST_SECRET = 'host-secret-value';
    try {
      const sandbox = await provider.acquire('env-check', { network: 'none' });
      const result = await sandbox.exec('env; echo "var:[$PATCHBAY_TEST_SECRET]"', { env: { GIVEN: 'given-value' } });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain('var:[]');
      expect(result.stdout).not.toContain('host-secret-value');
      expect(result.stdout).toContain('GIVEN=given-value');
      const names = result.stdout
        .split('\n')
        .filter((line) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(line))
        .map((line) => line.split('=')[0])
        .sort();
      // dash adds PWD itself; NPM_CONFIG_UPDATE_NOTIFIER is Patchbay's own; nothing else comes from the host.
      expect(names).toEqual(['GIVEN', 'HOME', 'LANG', 'NPM_CONFIG_UPDATE_NOTIFIER', 'PATH', 'PWD']);
      await sandbox.release();
    } finally {
      delete process.env.PATCHBAY_TEST_SECRET;
    }
  });

  it('runs in /workspace backed by the session host directory, with files owned by the sandbox user (the invoking one unless that is root)', async () => {
    const sandbox = await provider.acquire('owner-check', { network: 'none' });
    expect(sandbox.workdir).toBe('/workspace');
    const result = await sandbox.exec('pwd; echo made > made.txt; mkdir -p sub && echo x > sub/y');
    expect(result.stdout.trim()).toBe('/workspace');
    const host = provider.hostPath('owner-check');
    expect(host).toMatch(/workspaces[/\\]owner-check$/);
    for (const file of ['made.txt', 'sub', 'sub/y']) {
      const stats = await stat(path.join(host, file));
      expect(stats.uid).toBe(provider.sandboxUser?.uid ?? process.getuid?.());
      expect(stats.gid).toBe(provider.sandboxUser?.gid ?? process.getgid?.());
    }
    await sandbox.release();
  });

  it('can change what the host wrote into its workspace: a file the tools wrote, in folders they made, and a host clone', async () => {
    const sandbox = await provider.acquire('host-writes', { network: 'none' });
    const host = provider.hostPath('host-writes');
    // Written by the server (root here) before the first command, as the harness's clone is.
    await mkdir(path.join(host, 'cloned', 'deep'), { recursive: true });
    await writeFile(path.join(host, 'cloned', 'deep', 'file.txt'), 'clone\n');
    expect((await sandbox.exec('echo more >> cloned/deep/file.txt && rm -r cloned/deep && echo ok')).stdout).toBe(
      'ok\n',
    );
    // Written through the sandbox's own writeFile (the model's write tool) after commands ran.
    await sandbox.writeFile('new/dir/tool.txt', 'tool\n');
    const result = await sandbox.exec('echo more >> new/dir/tool.txt && touch new/dir/sibling && cat new/dir/tool.txt');
    expect(result).toMatchObject({ exitCode: 0, stdout: 'tool\nmore\n' });
    await sandbox.destroy();
  });

  it('cannot read files outside its workspace, the host home, or private system files', async () => {
    const sandbox = await provider.acquire('outside-check', { network: 'none' });
    const secret = path.join(outsideDir, 'secret.txt');
    const result = await sandbox.exec(
      `cat ${secret}; echo "cat=$?"; ls -A /root; echo "root=$?"; ls /home; echo "home=$?"; cat /etc/shadow; echo "shadow=$?"; ls /etc/ssl/private; echo "private=$?"`,
    );
    expect(result.stdout).not.toContain('outside-secret-content');
    expect(result.stdout).toMatch(/cat=[1-9]/);
    expect(result.stdout).toMatch(/root=[1-9]/);
    expect(result.stdout).toMatch(/home=[1-9]/);
    expect(result.stdout).toMatch(/shadow=[1-9]/);
    expect(result.stdout).toMatch(/private=[1-9]/);
    await sandbox.release();
  });

  it('keeps the system read-only and gives each command a fresh /tmp', async () => {
    const sandbox = await provider.acquire('readonly-check', { network: 'none' });
    const write = await sandbox.exec(
      // Asks access(2) about /usr rather than trying to create a file there: a broken sandbox must not change the host.
      'test -w /usr; echo "usr=$?"; test -w /usr/bin; echo "usr-bin=$?"; echo kept > /tmp/marker; echo "tmp=$?"',
    );
    expect(write.stdout).toMatch(/usr=[1-9]/);
    expect(write.stdout).toMatch(/usr-bin=[1-9]/);
    expect(write.stdout).toContain('tmp=0');
    const next = await sandbox.exec('cat /tmp/marker');
    expect(next.exitCode).not.toBe(0);
    expect(next.stdout).not.toContain('kept');
    await sandbox.release();
  });

  it('can run git and see only its own pid namespace', async () => {
    const sandbox = await provider.acquire('tools-check', { network: 'none' });
    const result = await sandbox.exec(
      'git init -q repo && git -C repo status --short && echo git-ok; ls /proc | grep -c "^[0-9]"',
    );
    expect(result.stdout).toContain('git-ok');
    const pidCount = Number(result.stdout.trim().split('\n').at(-1));
    expect(pidCount).toBeGreaterThan(0);
    expect(pidCount).toBeLessThan(10);
    await sandbox.release();
  });

  it('gives two sessions distinct workspaces that cannot see each other', async () => {
    const a = await provider.acquire('session-a', { network: 'none' });
    const b = await provider.acquire('session-b', { network: 'none' });
    expect(provider.hostPath('session-a')).not.toBe(provider.hostPath('session-b'));
    await a.writeFile('only-a.txt', 'belongs to a');
    const fromB = await b.exec(
      `ls -A /workspace; cat ${path.join(provider.hostPath('session-a'), 'only-a.txt')}; echo "rc=$?"`,
    );
    expect(fromB.stdout).not.toContain('only-a.txt\n');
    expect(fromB.stdout).not.toContain('belongs to a');
    expect(fromB.stdout).toMatch(/rc=[1-9]/);
    await expect(b.readFile(path.join(provider.hostPath('session-a'), 'only-a.txt'))).rejects.toMatchObject({
      code: 'path_refused',
    });
    await expect(b.readFile('../session-a/only-a.txt')).rejects.toMatchObject({ code: 'path_refused' });
    expect(await a.readFile('only-a.txt')).toBe('belongs to a');
    await a.release();
    await b.release();
  });

  describe('network', () => {
    let server: Server;
    let port: number;
    let connections = 0;

    beforeAll(async () => {
      server = createServer((socket) => {
        connections++;
        socket.end('hello-from-host\n');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const probe = () => `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port} && head -n1 <&3'; echo "rc=$?"`;

    it("network 'none' cannot reach a server on the host's loopback", async () => {
      const before = connections;
      const sandbox = await provider.acquire('net-none', { network: 'none' });
      const result = await sandbox.exec(probe(), { timeoutMs: 10_000 });
      expect(result.stdout).not.toContain('hello-from-host');
      expect(result.stdout).toMatch(/rc=[1-9]/);
      expect(connections).toBe(before);
      await sandbox.release();
    });

    it("network 'host' reaches the same server (the probe itself works)", async () => {
      const before = connections;
      const sandbox = await provider.acquire('net-host', { network: 'host' });
      const result = await sandbox.exec(probe(), { timeoutMs: 10_000 });
      expect(result.stdout).toContain('hello-from-host');
      expect(connections).toBe(before + 1);
      await sandbox.release();
    });
  });
});
