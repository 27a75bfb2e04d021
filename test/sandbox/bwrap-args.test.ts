import { describe, expect, it } from 'vitest';
import { buildBwrapArgs, type BwrapArgsInput } from '../../sandbox/index.ts';
import { DEFAULT_SANDBOX_LIMITS } from '../../sandbox/sandbox-limits.ts';

const base: BwrapArgsInput = {
  workspaceHostPath: '/data/workspaces/s1',
  workdir: '/workspace',
  cwd: '/workspace/src',
  network: 'none',
  env: { PATH: '/usr/bin:/bin', HOME: '/tmp/home', LANG: 'C.UTF-8', CI: '1' },
  hostSystem: [
    { path: '/bin', kind: 'symlink', target: 'usr/bin' },
    { path: '/lib64', kind: 'dir' },
  ],
  usr: [
    { path: '/usr/bin', kind: 'dir' },
    { path: '/usr/lib', kind: 'dir' },
  ],
  home: '/tmp/home',
  limits: { ...DEFAULT_SANDBOX_LIMITS, tmpMb: 64 },
  fds: { command: 4, seccomp: 5 },
};

/** Index of the first occurrence of a flag followed by the given operands. */
function find(args: string[], ...seq: string[]): number {
  for (let i = 0; i + seq.length <= args.length; i++) {
    if (seq.every((s, j) => args[i + j] === s)) return i;
  }
  return -1;
}

describe('buildBwrapArgs', () => {
  const cases: Array<{ name: string; input: Partial<BwrapArgsInput>; present: string[][]; absent: string[][] }> = [
    { name: 'network none unshares the network', input: { network: 'none' }, present: [['--unshare-net']], absent: [] },
    { name: 'network host shares it', input: { network: 'host' }, present: [], absent: [['--unshare-net']] },
    {
      name: 'network proxy unshares it and binds only the egress socket in',
      input: { network: 'proxy', egressSocket: '/tmp/patchbay-egress-x/1.sock' },
      present: [['--unshare-net'], ['--ro-bind', '/tmp/patchbay-egress-x/1.sock', '/run/patchbay/egress.sock']],
      absent: [],
    },
    {
      name: 'namespaces, session and lifetime flags',
      input: {},
      present: [
        ['--unshare-pid'],
        ['--unshare-ipc'],
        ['--unshare-uts'],
        ['--unshare-cgroup-try'],
        ['--unshare-user'],
        ['--disable-userns'],
        ['--die-with-parent'],
        ['--new-session'],
        ['--cap-drop', 'ALL'],
        ['--clearenv'],
      ],
      absent: [['--unshare-user-try']],
    },
    {
      name: 'the seccomp filter and the command script come from the given descriptors',
      input: {},
      present: [
        ['--seccomp', '5'],
        ['--ro-bind-data', '4', '/run/patchbay/command'],
      ],
      absent: [],
    },
    {
      name: 'no seccomp option on an architecture without a filter',
      input: { fds: { command: 4 } },
      present: [],
      absent: [['--seccomp']],
    },
    {
      name: 'workspace read-write at /workspace, cwd inside',
      input: {},
      present: [
        ['--bind', '/data/workspaces/s1', '/workspace'],
        ['--chdir', '/workspace/src'],
      ],
      absent: [],
    },
    {
      name: 'system read-only, fresh /tmp, /proc and minimal /dev',
      input: {},
      present: [
        ['--ro-bind', '/usr/bin', '/usr/bin'],
        ['--ro-bind', '/usr/lib', '/usr/lib'],
        ['--size', String(64 * 1024 * 1024), '--tmpfs', '/tmp'],
        ['--proc', '/proc'],
        ['--dev', '/dev'],
        ['--dir', '/tmp/home'],
        ['--ro-bind-try', '/etc/ssl/certs', '/etc/ssl/certs'],
        ['--ro-bind-try', '/etc/passwd', '/etc/passwd'],
      ],
      absent: [
        ['--ro-bind', '/usr', '/usr'],
        ['--ro-bind', '/usr/local', '/usr/local'],
        ['--bind', '/', '/'],
        ['--ro-bind', '/', '/'],
        ['--ro-bind-try', '/etc/shadow', '/etc/shadow'],
        ['--ro-bind-try', '/etc/ssl', '/etc/ssl'],
        ['--ro-bind-try', '/etc/gitconfig', '/etc/gitconfig'],
        ['--ro-bind', '/root', '/root'],
        ['--ro-bind', '/home', '/home'],
      ],
    },
    {
      name: 'merged-/usr symlinks stay symlinks, real dirs are bound read-only',
      input: {},
      present: [
        ['--symlink', 'usr/bin', '/bin'],
        ['--ro-bind', '/lib64', '/lib64'],
      ],
      absent: [['--ro-bind', '/bin', '/bin']],
    },
    {
      name: 'exactly the given environment',
      input: {},
      present: [
        ['--setenv', 'PATH', '/usr/bin:/bin'],
        ['--setenv', 'HOME', '/tmp/home'],
        ['--setenv', 'LANG', 'C.UTF-8'],
        ['--setenv', 'CI', '1'],
      ],
      absent: [],
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const args = buildBwrapArgs({ ...base, ...c.input }).options;
      for (const seq of c.present) expect(find(args, ...seq), seq.join(' ')).toBeGreaterThanOrEqual(0);
      for (const seq of c.absent) expect(find(args, ...seq), seq.join(' ')).toBe(-1);
    });
  }

  it('clears the environment before setting any variable and sets only the given ones', () => {
    const args = buildBwrapArgs(base).options;
    const setenvs = args.flatMap((a, i) => (a === '--setenv' ? [args[i + 1]] : []));
    expect(setenvs.sort()).toEqual(['CI', 'HOME', 'LANG', 'PATH']);
    expect(args.indexOf('--clearenv')).toBeLessThan(args.indexOf('--setenv'));
  });

  it('mounts /tmp before the home inside it', () => {
    const args = buildBwrapArgs(base).options;
    expect(find(args, '--tmpfs', '/tmp')).toBeLessThan(find(args, '--dir', '/tmp/home'));
  });

  it("runs the script from its file under prlimit, with nothing of the host or the environment in bwrap's argv", () => {
    const { argv } = buildBwrapArgs(base);
    expect(argv[0]).toBe('prlimit');
    expect(argv).toContain(`--nproc=${DEFAULT_SANDBOX_LIMITS.maxProcs}`);
    expect(argv.slice(-3)).toEqual(['--', '/bin/sh', '/run/patchbay/command']);
    expect(argv.join(' ')).not.toMatch(/\/data|workspaces|C\.UTF-8|setenv/);
  });
});
