import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandboxProvider, type LocalSandboxProvider } from '../../sandbox/index.ts';

/**
 * The sandbox replaces /tmp with its own tmpfs, so probes under /tmp prove nothing about mounts.
 * These sit where a real deployment keeps its data: a DATA_DIR outside /tmp (here under /srv, as
 * the Docker image's /data would be), with other sessions' workspaces, git mirrors, the embedded
 * database's directory and a private key beside it. Each must be invisible from inside.
 */
describe('the sandbox cannot see where a deployment keeps its data', () => {
  const marker = `probe-marker-${process.pid}-${Date.now()}`;
  let root: string;
  let dataDir: string;
  let provider: LocalSandboxProvider;
  let probes: Record<string, string>;

  beforeAll(async () => {
    await mkdir('/srv', { recursive: true });
    root = await mkdtemp('/srv/patchbay-probe-');
    dataDir = path.join(root, 'data');
    provider = await createLocalSandboxProvider({
      dataDir,
      log: pino({ level: 'silent' }),
      ttlMinutes: 60,
      mode: 'bwrap',
      bwrapPath: '/usr/bin/bwrap',
    });
    // Another session's workspace, made through the provider as the harness would.
    const other = await provider.acquire('other-session', { network: 'none' });
    await other.writeFile('secret-plan.txt', `${marker} other session`);
    await other.release();
    probes = {
      otherWorkspace: path.join(provider.hostPath('other-session'), 'secret-plan.txt'),
      mirror: path.join(dataDir, 'mirrors', 'github.com-acme-shop.git', 'HEAD'),
      database: path.join(dataDir, 'postgres', 'PG_VERSION'),
      credentials: path.join(dataDir, 'postgres-credentials.json'),
      key: path.join(root, 'github-app.private-key.pem'),
    };
    for (const [name, file] of Object.entries(probes)) {
      if (name === 'otherWorkspace') continue;
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, `${marker} ${name}`);
    }
  });
  afterAll(async () => {
    await provider.close();
    await rm(root, { recursive: true, force: true });
  });

  it('finds none of the probes by path, by listing, or by searching the whole tree', async () => {
    const sandbox = await provider.acquire('curious-session', { network: 'none' });
    await sandbox.writeFile('own.txt', `${marker} own`);
    const checks = Object.entries(probes).map(([name, file]) => `cat ${file} >/dev/null 2>&1 && echo "SEEN ${name}"`);
    const script = [
      ...checks,
      `ls -A ${dataDir} ${path.dirname(dataDir)} ${path.join(dataDir, 'workspaces')} 2>/dev/null | sed 's/^/LISTED /'`,
      `test -e ${root} && echo "SEEN deployment root"`,
      // Anything mounted anywhere (outside the read-only system and the kernel's own trees) that holds a probe.
      `grep -rls --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr '${marker}' / 2>/dev/null | sed 's/^/FOUND /'`,
      'echo probes-done',
    ].join('\n');
    const result = await sandbox.exec(script, { timeoutMs: 120_000 });
    expect(result.stdout).toContain('probes-done');
    const lines = result.stdout.split('\n').filter((l) => /^(SEEN|LISTED|FOUND) /.test(l));
    // The only probe the sandbox may find is the file it wrote itself, in its own workspace (and this
    // very script, which names the marker and is handed to the sandbox as /run/patchbay/command).
    expect(lines.filter((l) => l !== 'FOUND /workspace/own.txt' && l !== 'FOUND /run/patchbay/command')).toEqual([]);
    expect(lines).toContain('FOUND /workspace/own.txt');
    await sandbox.release();
  });
});
