import { chmod, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { checkBubblewrap, createLocalSandboxProvider } from '../../sandbox/index.ts';
import { captureLog, makeProvider, makeTempDir, removeDataDir } from './sandbox-test-helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

describe('persistent workspaces', () => {
  it('resumes the same workspace on a later acquire and removes it on destroy', async () => {
    const { provider, cleanup } = await makeProvider();
    cleanups.push(cleanup);
    const first = await provider.acquire('resume-me', { network: 'none' });
    await first.exec('echo from-first-run > notes.txt');
    await first.release();
    await expect(first.exec('true')).rejects.toMatchObject({ code: 'sandbox_failed' });

    const second = await provider.acquire('resume-me', { network: 'none' });
    expect(await second.readFile('notes.txt')).toBe('from-first-run\n');
    await second.destroy();
    expect(await exists(provider.hostPath('resume-me'))).toBe(false);

    const third = await provider.acquire('resume-me', { network: 'none' });
    expect(await third.listFiles('.')).toEqual([]);
    await third.release();
  });

  it('rejects session ids that could escape the workspaces directory', async () => {
    const { provider, cleanup } = await makeProvider();
    cleanups.push(cleanup);
    for (const id of ['../evil', '..', 'a/b', '', '.hidden', 'x'.repeat(200)]) {
      expect(() => provider.hostPath(id)).toThrow(expect.objectContaining({ code: 'invalid_input' }));
      await expect(provider.acquire(id, { network: 'none' })).rejects.toMatchObject({ code: 'invalid_input' });
    }
    expect(provider.hostPath('0b5e7c2a-9f1d-4c1e-8a77-2f6f0c1d9e10')).toMatch(/0b5e7c2a-9f1d-4c1e-8a77-2f6f0c1d9e10$/);
  });
});

describe('TTL reaper', () => {
  it('removes idle workspaces after the TTL and keeps fresh and in-use ones', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const minutes = (n: number) => new Date(Date.parse('2030-01-01T00:00:00Z') + n * 60_000);
    const { provider, dataDir, cleanup } = await makeProvider({ ttlMinutes: 60, clock: () => now });
    cleanups.push(cleanup);

    const old = await provider.acquire('old', { network: 'none' });
    await old.writeFile('f.txt', 'x');
    await old.release();

    now = minutes(50);
    const fresh = await provider.acquire('fresh', { network: 'none' });
    await fresh.release();
    const busy = await provider.acquire('busy', { network: 'none' });

    expect(await provider.reap(minutes(59))).toEqual([]);
    expect(await provider.reap(minutes(90))).toEqual(['old']);
    expect(await exists(provider.hostPath('old'))).toBe(false);
    expect(await exists(provider.hostPath('fresh'))).toBe(true);

    // Long past every TTL: the held workspace survives, the released one goes.
    now = minutes(200);
    expect(await provider.reap()).toEqual(['fresh']);
    expect(await exists(provider.hostPath('busy'))).toBe(true);

    // An exec counts as use: the TTL runs from the release, not from the acquire.
    await busy.exec('true');
    await busy.release();
    expect(await provider.reap(minutes(250))).toEqual([]);
    expect(await provider.reap(minutes(261))).toEqual(['busy']);
    expect(await readdir(path.join(dataDir, 'workspaces'))).toEqual([]);
    expect(await readdir(path.join(dataDir, 'workspace-meta'))).toEqual([]);
  });

  it('keeps a workspace while another holder of the same session still has it', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const { provider, cleanup } = await makeProvider({ ttlMinutes: 1, clock: () => now });
    cleanups.push(cleanup);
    const a = await provider.acquire('shared', { network: 'none' });
    const b = await provider.acquire('shared', { network: 'none' });
    await a.release();
    await a.release();
    now = new Date('2030-01-02T00:00:00Z');
    expect(await provider.reap()).toEqual([]);
    await b.release();
    expect(await provider.reap(new Date('2030-01-03T00:00:00Z'))).toEqual(['shared']);
  });
});

describe('bubblewrap availability', () => {
  it('passes with the installed bubblewrap', async () => {
    await expect(checkBubblewrap('/usr/bin/bwrap')).resolves.toBeUndefined();
    // The bare name is found on the standard PATH, not the host process's.
    await expect(checkBubblewrap()).resolves.toBeUndefined();
  });

  it('fails creation with an actionable message when bwrap is missing', async () => {
    const dataDir = await makeTempDir('no-bwrap');
    cleanups.push(() => removeDataDir(dataDir));
    const attempt = createLocalSandboxProvider({
      dataDir,
      log: pino({ level: 'silent' }),
      ttlMinutes: 60,
      mode: 'bwrap',
      bwrapPath: path.join(dataDir, 'no-such-bwrap'),
    });
    await expect(attempt).rejects.toMatchObject({
      code: 'sandbox_unavailable',
      message: expect.stringMatching(
        /bubblewrap \(bwrap\) is not installed.*apt-get install bubblewrap.*SANDBOX=unsafe-local/,
      ),
    });
  });

  it('explains when bwrap runs but cannot create namespaces', async () => {
    const dir = await makeTempDir('broken-bwrap');
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // Stands in for a kernel that forbids user namespaces; prints what real bwrap prints there.
    const broken = path.join(dir, 'bwrap');
    await writeFile(broken, '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n');
    await chmod(broken, 0o755);
    await expect(checkBubblewrap(broken)).rejects.toMatchObject({
      code: 'sandbox_unavailable',
      message: expect.stringMatching(
        /cannot create its sandbox \(bwrap: No permissions to create new namespace\).*SANDBOX=unsafe-local/,
      ),
    });
  });

  it("warns once when created in 'unsafe-local' mode and still hides the host environment", async () => {
    const captured = captureLog();
    const { provider, cleanup } = await makeProvider({
      mode: 'unsafe-local',
      log: captured.log,
      bwrapPath: '/nonexistent',
    });
    cleanups.push(cleanup);
    expect(provider.kind).toBe('unsafe-local');
    const warnings = captured.lines().filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toMatch(/without isolation/);

    process.env.PATCHBAY_TEST_SECRET = 'host-secret-value';
    try {
      const sandbox = await provider.acquire('unsafe', { network: 'none' });
      const result = await sandbox.exec('env; pwd');
      expect(result.stdout).not.toContain('host-secret-value');
      expect(result.stdout).not.toContain('PATCHBAY_TEST_SECRET');
      expect(result.stdout.trim().split('\n').at(-1)).toBe(provider.hostPath('unsafe'));
      await sandbox.release();
    } finally {
      delete process.env.PATCHBAY_TEST_SECRET;
    }
    expect(captured.lines().filter((l) => l.level === 40)).toHaveLength(1);
  });

  it("reports kind 'local' in bwrap mode", async () => {
    const { provider, cleanup } = await makeProvider();
    cleanups.push(cleanup);
    expect(provider.kind).toBe('local');
  });
});
