import { chown, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
import { eventually, makeProvider, pidsWithMarker, uniqueSleepSeconds } from '../sandbox/sandbox-test-helpers.ts';
import { probeWritable } from './writable-probe.ts';

const asRoot = process.getuid?.() === 0;
/** A host user that is neither the server nor the sandbox. */
const OTHER_UID = 4242;

/**
 * The review's probes of host privilege, through the real local provider as the server runs it
 * (here usually as root, the README's quick start): the sandbox's uid is not host root, kernel
 * settings and /sys are out of reach, files of other host users stay theirs.
 */
describe('security probes: no host root inside the sandbox', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  let sandbox: Sandbox;

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider());
    sandbox = await provider.acquire('security-host-root', { network: 'none' });
  });
  afterAll(async () => {
    await sandbox.destroy();
    await cleanup();
  });

  it('runs every sandboxed process as a non-zero host uid and gid, as /proc/<pid>/status shows them on the host', async () => {
    const marker = uniqueSleepSeconds();
    const stop = new AbortController();
    const running = sandbox.exec(`id -u; sleep ${marker}`, { signal: stop.signal, timeoutMs: 30_000 });
    expect(await eventually(async () => (await pidsWithMarker(`sleep ${marker}`)).length > 0)).toBe(true);
    const hostIds: string[] = [];
    for (const pid of await pidsWithMarker(`sleep ${marker}`)) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      // Real, effective, saved and filesystem ids, as the host sees them.
      hostIds.push(...[/^Uid:(.*)$/m, /^Gid:(.*)$/m].flatMap((re) => re.exec(status)![1]!.trim().split(/\s+/)));
    }
    stop.abort();
    await running;
    expect(hostIds.length).toBeGreaterThanOrEqual(8);
    expect(
      hostIds.filter((id) => id === '0'),
      `host ids ${hostIds.join(' ')}`,
    ).toEqual([]);
    if (!asRoot) expect(new Set(hostIds.filter((_, i) => i % 8 < 4))).toEqual(new Set([String(process.getuid?.())]));
  });

  it('cannot write host kernel settings: /proc/sys is a read-only mount and no file under it is writable (nothing is written to find out)', async () => {
    const [coreProbe] = await probeWritable(sandbox, ['/proc/sys/kernel/core_pattern']);
    expect(coreProbe).toMatchObject({ exists: true, writable: false, mountPoint: '/proc/sys', readOnlyMount: true });
    // find -writable asks access(2), as test -w does: it opens nothing.
    const writable = await sandbox.exec('find /proc/sys -type f -writable 2>/dev/null | head -n 5');
    expect(writable.stdout).toBe('');
  });

  it('cannot open /sys, cgroup control files, sysrq or the modprobe path for writing (asked of access(2), never tried)', async () => {
    const targets = [
      '/sys/kernel/uevent_helper',
      '/sys/fs/cgroup/cgroup.procs',
      '/sys/fs/cgroup/release_agent',
      '/sys/fs/cgroup/memory/release_agent',
      '/sys/fs/cgroup/pids/cgroup.procs',
      '/proc/sysrq-trigger',
      '/proc/sys/kernel/modprobe',
      '/proc/sys/kernel/core_pattern',
      '/proc/sys/fs/binfmt_misc/register',
    ];
    const probes = await probeWritable(sandbox, targets);
    expect(probes.filter((p) => p.writable).map((p) => p.path)).toEqual([]);
    // /sys is not mounted at all: nothing under it exists inside.
    expect(probes.filter((p) => p.path.startsWith('/sys/') && p.exists).map((p) => p.path)).toEqual([]);
  });

  it("cannot write other host users' files that a bind shows: the server's (root's) and a third user's", async () => {
    const root = provider.hostPath('security-host-root');
    // First command: the workspace is the sandbox user's from here on; the host then adds files of others.
    expect((await sandbox.exec('echo mine > mine.txt && cat mine.txt')).stdout).toBe('mine\n');
    await writeFile(path.join(root, 'server-owned.txt'), 'server\n', { mode: 0o644 });
    await writeFile(path.join(root, 'other-owned.txt'), 'other\n', { mode: 0o644 });
    if (asRoot) await chown(path.join(root, 'other-owned.txt'), OTHER_UID, OTHER_UID);
    // As a non-root server the probe names host files: it must only ask, never try a write.
    const files = asRoot ? ['server-owned.txt', 'other-owned.txt'] : ['/etc/passwd', '/usr/bin/env'];
    const probes = await probeWritable(sandbox, files);
    expect(probes.map((p) => [p.path, p.exists, p.writable])).toEqual(files.map((f) => [f, true, false]));
    expect((await probeWritable(sandbox, ['mine.txt']))[0]!.writable).toBe(true);
    if (asRoot) {
      expect(await readFile(path.join(root, 'server-owned.txt'), 'utf8')).toBe('server\n');
      expect((await stat(path.join(root, 'other-owned.txt'))).uid).toBe(OTHER_UID);
    }
  });

  it('refuses io_uring setup (its operations would bypass the seccomp filter)', async () => {
    const script = [
      'import ctypes, os',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'params = ctypes.create_string_buffer(120)',
      // io_uring_setup is 425 on x86_64 and on arm64 (asm-generic).
      'fd = libc.syscall(425, 4, params)',
      'print(fd, ctypes.get_errno())',
    ].join('\n');
    const result = await sandbox.exec(`python3 -c '${script}'`);
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('-1 1');
  });
});
