import { spawnSync } from 'node:child_process';
import { access, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildBwrapArgs, type BwrapArgsInput } from '../../sandbox/index.ts';
import { DEFAULT_SANDBOX_LIMITS, diskFileCap, limitFromExit, prlimitOptions } from '../../sandbox/sandbox-limits.ts';
import {
  DEFAULT_SANDBOX_USER,
  dropPrivilegesArgv,
  makeStageDir,
  sandboxUserFor,
  stageBinds,
} from '../../sandbox/sandbox-user.ts';
import { makeTempDir } from './sandbox-test-helpers.ts';
import { buildSeccompFilter, DENIED_SYSCALLS } from '../../sandbox/seccomp-filter.ts';

const MB = 1024 * 1024;

describe('the sandbox user, the stage and the quota cap (pure decisions)', () => {
  it.each([
    { name: 'a non-root server keeps its own uid', serverUid: 1000, configured: undefined, expected: undefined },
    {
      name: 'a root server gets the default sandbox user',
      serverUid: 0,
      configured: undefined,
      expected: DEFAULT_SANDBOX_USER,
    },
    {
      name: 'a root server gets the configured one',
      serverUid: 0,
      configured: { uid: 4000, gid: 4001 },
      expected: { uid: 4000, gid: 4001 },
    },
  ])('$name', ({ serverUid, configured, expected }) => {
    expect(sandboxUserFor(serverUid, configured)).toEqual(expected);
  });

  it('never lets uid or gid 0 be the sandbox user', () => {
    expect(() => sandboxUserFor(0, { uid: 0, gid: 5 })).toThrow(/must not be 0/);
    expect(() => sandboxUserFor(0, { uid: 5, gid: 0 })).toThrow(/must not be 0/);
    expect(DEFAULT_SANDBOX_USER.uid).not.toBe(0);
  });

  it('drops ids, groups and every capability before bubblewrap', () => {
    expect(dropPrivilegesArgv({ uid: 4000, gid: 4001 })).toEqual([
      'setpriv',
      '--reuid=4000',
      '--regid=4001',
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--',
    ]);
  });

  it('moves the workspace and read-only binds onto the stage and nothing else', () => {
    const staged = stageBinds('/tmp/stage', '/root/.patchbay/workspaces/s1', [
      { hostPath: '/root/.patchbay/mirrors/r.git/objects', sandboxPath: '/patchbay/objects' },
    ]);
    expect(staged).toEqual({
      binds: [
        '/root/.patchbay/workspaces/s1',
        '/tmp/stage/workspace',
        '/root/.patchbay/mirrors/r.git/objects',
        '/tmp/stage/src-0',
      ],
      // The mirror's objects reach bubblewrap as an overlay whose layers name no host path.
      overlays: ['/tmp/stage', 'src-0:empty', '/tmp/stage/ro-0'],
      workspaceHostPath: '/tmp/stage/workspace',
      readOnlyBinds: [{ hostPath: '/tmp/stage/ro-0', sandboxPath: '/patchbay/objects' }],
    });
    // The mirror's objects, the three engines' CLIs, Claude Code's managed settings and a spare fit; a seventh does not.
    const binds = (n: number) => Array.from({ length: n }, (_, i) => ({ hostPath: `/h${i}`, sandboxPath: `/s${i}` }));
    expect(stageBinds('/tmp/stage', '/w', binds(6)).readOnlyBinds).toHaveLength(6);
    expect(() => stageBinds('/tmp/stage', '/w', binds(7))).toThrow(/at most 6/);
  });

  it.each([
    { used: 0, expected: 64 * MB },
    { used: 40 * MB, expected: 24 * MB },
    { used: 64 * MB, expected: 0 },
    { used: 90 * MB, expected: 0 },
  ])('caps files at what is left of a 64 MB quota when $used bytes are used', ({ used, expected }) => {
    const limits = { ...DEFAULT_SANDBOX_LIMITS, diskMb: 64, fileMb: 4096 };
    expect(diskFileCap(limits, used)).toBe(expected);
    expect(prlimitOptions(limits, expected)).toContain(`--fsize=${expected}`);
  });

  it.each([
    [
      'Python',
      'Traceback (most recent call last):\n  File "<string>", line 2, in <module>\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n',
    ],
    ['Node', 'Error: spawn /bin/sh EAGAIN\n'],
    ['Go', 'fork/exec /usr/bin/true: resource temporarily unavailable\n'],
    ['dash', 'sh: 1: Cannot fork\n'],
  ])(
    'reads a refused fork from %s as the process limit (RLIMIT_NPROC may refuse before the cgroup counts)',
    (_tool, stderr) => {
      expect(limitFromExit(1, stderr, DEFAULT_SANDBOX_LIMITS)?.kind).toBe('processes');
    },
  );

  it('reads a write past the file size cap from a program that ignores SIGXFSZ', () => {
    expect(limitFromExit(1, 'OSError: [Errno 27] File too large\n', DEFAULT_SANDBOX_LIMITS)?.kind).toBe('file-size');
    expect(limitFromExit(0, 'File too large, but handled\n', DEFAULT_SANDBOX_LIMITS)).toBeUndefined();
  });

  it('keeps SANDBOX_FILE_MB when the quota leaves more', () => {
    const limits = { ...DEFAULT_SANDBOX_LIMITS, diskMb: 10240, fileMb: 50 };
    expect(diskFileCap(limits, 0)).toBe(50 * MB);
  });

  it('makes /proc/sys read-only after mounting /proc', () => {
    const input: BwrapArgsInput = {
      workspaceHostPath: '/tmp/stage/workspace',
      workdir: '/workspace',
      cwd: '/workspace',
      network: 'none',
      env: { PATH: '/usr/bin:/bin' },
      hostSystem: [],
      usr: [],
      home: '/tmp/home',
      limits: DEFAULT_SANDBOX_LIMITS,
      fds: { command: 4 },
    };
    const { options } = buildBwrapArgs(input);
    const proc = options.indexOf('--proc');
    const sys = options.findIndex(
      (arg, i) => arg === '--ro-bind' && options[i + 1] === '/proc/sys' && options[i + 2] === '/proc/sys',
    );
    expect(proc).toBeGreaterThan(-1);
    expect(sys).toBeGreaterThan(proc);
  });

  it('lists io_uring among the denied calls and compiles them into the filter', () => {
    expect(DENIED_SYSCALLS.io_uring).toEqual(['io_uring_setup', 'io_uring_enter', 'io_uring_register']);
    // JEQ io_uring_setup (425) appears as an instruction of the x86_64 program.
    const program = buildSeccompFilter('x64');
    const jumps = Array.from({ length: program.length / 8 }, (_, i) => ({
      code: program.readUInt16LE(i * 8),
      k: program.readUInt32LE(i * 8 + 4),
    }));
    for (const nr of [425, 426, 427]) expect(jumps).toContainEqual({ code: 0x15, k: nr });
  });

  it('makes a stage searchable but not listable, and removes the stages of servers that are gone', async () => {
    const tmp = await makeTempDir('stages');
    try {
      // A pid that existed and is gone, and this process's own.
      const gone = spawnSync('true').pid!;
      for (const pid of [gone, process.pid]) {
        for (const slot of ['workspace', 'ro-0', 'ro-1'])
          await mkdir(path.join(tmp, `patchbay-stage-${pid}-old`, slot), { recursive: true });
      }
      const stage = await makeStageDir(tmp);
      expect(path.basename(stage)).toMatch(new RegExp(`^patchbay-stage-${process.pid}-`));
      expect((await stat(stage)).mode & 0o777).toBe(0o711);
      for (const slot of ['workspace', 'ro-0', 'ro-1'])
        expect((await stat(path.join(stage, slot))).mode & 0o777).toBe(0o700);
      await expect(access(path.join(tmp, `patchbay-stage-${gone}-old`))).rejects.toThrow();
      await access(path.join(tmp, `patchbay-stage-${process.pid}-old`));
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
