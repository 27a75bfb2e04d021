import { SANDBOX_PROXY_SOCKET } from './egress-relay.ts';
import type { SandboxSpec } from './sandbox.ts';
import { prlimitOptions, type SandboxLimits } from './sandbox-limits.ts';

/** How a top-level system path looks on the host: a real directory, or a symlink (merged /usr). */
export type HostSystemEntry = { path: string; kind: 'dir' } | { path: string; kind: 'symlink'; target: string };

/**
 * PATH for the sandboxed command, and for finding `bwrap` itself (spawned with an empty
 * environment, so a bare 'bwrap' is looked up here rather than in the host's PATH).
 */
export const STANDARD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Top-level system paths the sandbox needs (merged-/usr symlinks or real directories). */
export const SYSTEM_PATHS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;

/**
 * The parts of /usr that tools need: programs, libraries, data (git templates, zoneinfo, CA
 * bundles) and headers for compilers. Not /usr/local (host-installed software and its config, added
 * only with SANDBOX_USR_LOCAL=true), /usr/src or /usr/games.
 */
export const USR_PATHS = [
  '/usr/bin',
  '/usr/sbin',
  '/usr/lib',
  '/usr/lib32',
  '/usr/lib64',
  '/usr/libx32',
  '/usr/libexec',
  '/usr/share',
  '/usr/include',
] as const;

/** Inside the sandbox: the command's script, copied in from a file descriptor (never in any argv). */
export const COMMAND_PATH = '/run/patchbay/command';

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
  // fontconfig's configuration, so a browser in the sandbox (the screenshot tool) finds the fonts in /usr/share/fonts.
  '/etc/fonts',
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
  /** Host directories shown read-only inside (the mirror's objects, for a shared clone). */
  readOnlyBinds?: readonly { hostPath: string; sandboxPath: string }[];
  hostSystem: readonly HostSystemEntry[];
  /** The parts of /usr bound read-only (see USR_PATHS). */
  usr: readonly HostSystemEntry[];
  /** Fresh, per-command home inside the tmpfs /tmp. */
  home: string;
  limits: SandboxLimits;
  /** The file size cap when less than limits.fileMb (the disk quota left: see diskFileCap). */
  fileBytes?: number;
  /**
   * File descriptors bubblewrap reads: the command's script (copied to COMMAND_PATH) and the
   * compiled seccomp filter (none on an architecture the filter does not know).
   */
  fds: { command: number; seccomp?: number };
};

/**
 * What `bwrap` needs to run the command in a fresh, isolated sandbox. Pure. `options` are handed to
 * bubblewrap through `--args FD`, not its argv, so the environment and host paths in them stay out
 * of the host's process list and out of the sandbox's /proc/1/cmdline; `argv` (after `--` on
 * bubblewrap's own command line) holds no command text, paths or values.
 */
export function buildBwrapArgs(input: BwrapArgsInput): { options: string[]; argv: string[] } {
  const args: string[] = [
    ...userNamespaceArgs(),
    // Our own pid/ipc/uts/cgroup namespaces, so nothing on the host is visible or signalable.
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
    ...kernelSurfaceArgs(input.fds.seccomp),
  ];
  args.push(...usrArgs(input.usr));
  for (const entry of input.hostSystem) {
    if (entry.kind === 'symlink') args.push('--symlink', entry.target, entry.path);
    else args.push('--ro-bind', entry.path, entry.path);
  }
  for (const path of ETC_PATHS) args.push('--ro-bind-try', path, path);
  args.push('--proc', '/proc', ...procSysArgs(), '--dev', '/dev', ...tmpArgs(input.limits), '--dir', input.home);
  for (const bind of input.readOnlyBinds ?? []) args.push('--ro-bind', bind.hostPath, bind.sandboxPath);
  args.push('--bind', input.workspaceHostPath, input.workdir, '--chdir', input.cwd);
  for (const [name, value] of Object.entries(input.env)) args.push('--setenv', name, value);
  args.push('--ro-bind-data', String(input.fds.command), COMMAND_PATH);
  return { options: args, argv: launchArgv(input.limits, input.fileBytes) };
}

/**
 * Always a user namespace of the sandbox's own (the uid inside maps to the invoking one), and no
 * further ones inside it: nested user namespaces are how unprivileged code reaches mount,
 * network and other kernel interfaces that need capabilities.
 */
function userNamespaceArgs(): string[] {
  return ['--unshare-user', '--disable-userns'];
}

/** The seccomp filter (seccomp-filter.ts), loaded by bubblewrap just before it runs the command. */
function kernelSurfaceArgs(seccompFd: number | undefined): string[] {
  return seccompFd === undefined ? [] : ['--seccomp', String(seccompFd)];
}

/**
 * /proc/sys read-only: bubblewrap covers it only when the directory itself is writable, which it
 * never is, so its 700-odd files (kernel.core_pattern among them) stay as writable as the uid
 * allows. The source is the host's /proc/sys; sysctl files answer for the reader's own namespaces.
 */
function procSysArgs(): string[] {
  return ['--ro-bind', '/proc/sys', '/proc/sys'];
}

/** /usr holds only the parts tools need (USR_PATHS), each bound read-only, and is read-only itself. */
function usrArgs(usr: readonly HostSystemEntry[]): string[] {
  const args = ['--tmpfs', '/usr'];
  for (const entry of usr) {
    if (entry.kind === 'symlink') args.push('--symlink', entry.target, entry.path);
    else args.push('--ro-bind', entry.path, entry.path);
  }
  args.push('--remount-ro', '/usr');
  return args;
}

/** A private /tmp of bounded size (tmpfs pages are memory). */
function tmpArgs(limits: SandboxLimits): string[] {
  return ['--size', String(limits.tmpMb * 1024 * 1024), '--tmpfs', '/tmp'];
}

/**
 * The command's script arrives on a file descriptor and is run from a file, so it never appears in
 * an argv (the host's `ps` shows `sh /run/patchbay/command`); `prlimit` sets the per-process
 * limits first, inside the sandbox's user namespace (see prlimitOptions).
 */
function launchArgv(limits: SandboxLimits, fileBytes: number | undefined): string[] {
  return ['prlimit', ...prlimitOptions(limits, fileBytes), '--', '/bin/sh', COMMAND_PATH];
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
