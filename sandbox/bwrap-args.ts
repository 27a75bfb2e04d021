import { SANDBOX_PROXY_SOCKET } from './egress-relay.ts';
import type { SandboxSpec } from './sandbox.ts';

/** How a top-level system path looks on the host: a real directory, or a symlink (merged /usr). */
export type HostSystemEntry = { path: string; kind: 'dir' } | { path: string; kind: 'symlink'; target: string };

/**
 * PATH for the sandboxed command, and for finding `bwrap` itself (spawned with an empty
 * environment, so a bare 'bwrap' is looked up here rather than in the host's PATH).
 */
export const STANDARD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Top-level system paths the sandbox needs, besides /usr which is always bound. */
export const SYSTEM_PATHS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;

/**
 * The parts of /etc that git, sh and TLS clients need. Deliberately no /etc/ssl/private,
 * no /etc/shadow and no /etc/gitconfig (a host credential helper must not leak in).
 * Bound with --ro-bind-try, so a path missing on this host is skipped.
 */
export const ETC_PATHS = [
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/hosts',
  '/etc/host.conf',
  '/etc/resolv.conf',
  '/etc/gai.conf',
  '/etc/services',
  '/etc/protocols',
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/pki/tls/certs',
  '/etc/pki/ca-trust',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/alternatives',
  '/etc/mime.types',
  '/etc/os-release',
] as const;

export type BwrapArgsInput = {
  /** Host directory mounted read-write at `workdir`. */
  workspaceHostPath: string;
  /** Where the workspace appears inside, for example /workspace. */
  workdir: string;
  /** Absolute working directory inside the sandbox (already confined to `workdir`). */
  cwd: string;
  network: SandboxSpec['network'];
  /** For network 'proxy': host path of the egress proxy's unix socket, bound into the sandbox. */
  egressSocket?: string;
  /** The complete environment of the command; nothing else is inherited. */
  env: Record<string, string>;
  hostSystem: readonly HostSystemEntry[];
  /** Fresh, per-command home inside the tmpfs /tmp. */
  home: string;
  command: string;
};

/** The argv after `bwrap` that runs `/bin/sh -c command` in a fresh, isolated sandbox. Pure. */
export function buildBwrapArgs(input: BwrapArgsInput): string[] {
  const args: string[] = [
    // Namespaces: a user namespace where the kernel allows one (files keep the invoking uid),
    // and our own pid/ipc/uts/cgroup so nothing on the host is visible or signalable.
    '--unshare-user-try',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...networkArgs(input),
    '--hostname',
    'patchbay-sandbox',
    // Run as the invoking uid but without capabilities, even when the host user is root.
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    // A new session stops the command from injecting keystrokes into a host terminal (TIOCSTI).
    '--new-session',
    '--clearenv',
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const entry of input.hostSystem) {
    if (entry.kind === 'symlink') args.push('--symlink', entry.target, entry.path);
    else args.push('--ro-bind', entry.path, entry.path);
  }
  for (const path of ETC_PATHS) args.push('--ro-bind-try', path, path);
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--dir', input.home);
  args.push('--bind', input.workspaceHostPath, input.workdir, '--chdir', input.cwd);
  for (const [name, value] of Object.entries(input.env)) args.push('--setenv', name, value);
  args.push('--', '/bin/sh', '-c', input.command);
  return args;
}

/**
 * Network: 'none' and 'proxy' get a namespace of their own with only loopback. 'proxy' also gets
 * the host egress proxy's socket, which a relay inside exposes on 127.0.0.1 (see egress-relay.ts).
 */
export function networkArgs(input: Pick<BwrapArgsInput, 'network' | 'egressSocket'>): string[] {
  switch (input.network) {
    case 'host':
      return [];
    case 'none':
      return ['--unshare-net'];
    case 'proxy':
      if (!input.egressSocket) throw new Error("network 'proxy' needs the egress proxy's socket");
      return ['--unshare-net', '--ro-bind', input.egressSocket, SANDBOX_PROXY_SOCKET];
    default: {
      const _never: never = input.network;
      return _never;
    }
  }
}
