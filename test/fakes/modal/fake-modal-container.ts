import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import {
  chmod,
  copyFile,
  cp,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { ImageFile, ImageTool } from './fake-modal-image.ts';

/**
 * The fake Modal's "container": a directory tree holding the writable parts of a sandbox's
 * filesystem (/workspace, /tmp, /root, and /etc's entries the image's build wrote), and commands
 * run for real in bubblewrap with the host's system directories read-only (standing in for the
 * image's git, sh and coreutils) and no network.
 * Every process carries its sandbox and exec in its environment, which is how the fake finds
 * and kills them. A filesystem snapshot is a copy of that tree.
 */
export const CONTAINER_DIRS = ['workspace', 'tmp', 'root'] as const;
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/lib32'];
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export async function makeContainerFs(dir: string, from?: string): Promise<void> {
  if (from) {
    await cp(from, dir, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  } else {
    for (const sub of CONTAINER_DIRS) await mkdir(join(dir, sub), { recursive: true });
  }
}

/**
 * Puts the files a registry image's build wrote under /etc into a new sandbox's tree (its `etc/`),
 * with the modes the build left; the fake runs as root, so they are root's, as the build's are.
 * They are the sandbox's own copy: a root command may change them, and a snapshot keeps them.
 */
export async function writeImageFiles(dir: string, files: readonly ImageFile[]): Promise<void> {
  const sorted = [...files].sort((a, b) => a.path.localeCompare(b.path));
  for (const file of sorted) {
    const at = join(dir, file.path);
    if (file.bytes === undefined) await mkdir(at, { recursive: true });
    else await writeFile(at, file.bytes);
  }
  // Modes last, deepest first, so a read-only directory is made read-only after its files are in.
  for (const file of sorted.reverse()) await chmod(join(dir, file.path), file.mode);
}

/**
 * The bwrap arguments for the container's /etc: the host's read-only, or, when the image's build
 * wrote files there (`etc/` in the tree), a tmpfs with each host entry bound back read-only and the
 * image's entries bound from the tree (writable to root, as a Modal container's root filesystem is),
 * then made read-only itself so that nothing else written there is silently lost between commands.
 */
function etcArgs(fsDir: string): string[] {
  const own = join(fsDir, 'etc');
  if (!existsSync(own)) return ['--ro-bind', '/etc', '/etc'];
  const image = readdirSync(own);
  const host = readdirSync('/etc', { withFileTypes: true }).filter((entry) => !image.includes(entry.name));
  return [
    '--tmpfs',
    '/etc',
    ...host.flatMap((entry) =>
      entry.isSymbolicLink()
        ? ['--symlink', readlinkSync(`/etc/${entry.name}`), `/etc/${entry.name}`]
        : ['--ro-bind', `/etc/${entry.name}`, `/etc/${entry.name}`],
    ),
    ...image.flatMap((name) => ['--bind', join(own, name), `/etc/${name}`]),
    '--remount-ro',
    '/etc',
  ];
}

/**
 * A snapshot's copy of the tree, as Modal snapshots a live sandbox: what is there as the copy walks
 * it. A file removed meanwhile (a browser's temporary file) is not in the snapshot, and ends nothing.
 * Sockets, pipes and devices are left out, as an image layer leaves them out (a file system snapshot
 * holds files, not a listening process's endpoint): a server's socket in the workspace does not end
 * the snapshot. Modes and modification times are kept.
 */
export async function copyContainerFs(dir: string, to: string): Promise<void> {
  const stats = await lstat(dir).catch(unlessVanished);
  if (!stats) return;
  if (stats.isDirectory()) {
    await mkdir(to, { recursive: true });
    for (const name of (await readdir(dir).catch(unlessVanished)) ?? []) {
      await copyContainerFs(join(dir, name), join(to, name));
    }
  } else if (stats.isSymbolicLink()) {
    const target = await readlink(dir).catch(unlessVanished);
    if (target !== undefined) await symlink(target, to);
    return;
  } else if (stats.isFile()) {
    const copied = await copyFile(dir, to).then(
      () => true,
      (error: unknown) => unlessVanished(error) ?? false,
    );
    if (!copied) return;
  } else {
    return; // a socket, pipe or device
  }
  await chmod(to, stats.mode & 0o7777);
  await utimes(to, stats.atime, stats.mtime);
}

/** Undefined where the entry vanished while the snapshot was taken; any other failure stands. */
function unlessVanished(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return undefined;
  throw error;
}

export async function removeContainerFs(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/**
 * Kills every process that carries `marker` (NAME=value) in its environment: the fake tags each
 * command with its sandbox and exec, and a command's children inherit that however they detach.
 */
export async function killMarked(marker: string): Promise<void> {
  const needle = Buffer.from(`\0${marker}\0`);
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`).catch(() => undefined);
    if (!environ || !Buffer.concat([Buffer.from([0]), environ]).includes(needle)) continue;
    try {
      process.kill(Number(entry), 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

export type ContainerProcessSpec = {
  fsDir: string;
  args: string[];
  workdir: string;
  env: Record<string, string>;
  /** An image with nothing in it (FROM scratch): no system directories, so not even sh. */
  bare?: boolean;
  /** The commands the image's build put in /usr/local/bin (npm install -g), standing in for the image's own. */
  tools?: readonly ImageTool[];
  /** Extra bwrap arguments (the internet's bridges and /etc/hosts), before the command. */
  extraBinds?: readonly string[];
};

/** Starts `args` inside the container; `env` should carry markers for killMarked. */
export function startInContainer(spec: ContainerProcessSpec): ChildProcess {
  const binds = spec.bare
    ? []
    : [
        ...SYSTEM_DIRS.filter((dir) => existsSync(dir)).flatMap((dir) => ['--ro-bind', dir, dir]),
        ...etcArgs(spec.fsDir),
      ];
  const env = { PATH: DEFAULT_PATH, HOME: '/root', LANG: 'C.UTF-8', ...spec.env };
  const tools = spec.tools?.length
    ? ['--tmpfs', '/usr/local/bin', ...spec.tools.flatMap((t) => ['--ro-bind', t.hostPath, `/usr/local/bin/${t.bin}`])]
    : [];
  const bwrapArgs = [
    ...binds,
    ...tools,
    ...(spec.extraBinds ?? []),
    ...CONTAINER_DIRS.flatMap((sub) => ['--bind', join(spec.fsDir, sub), `/${sub}`]),
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    // No PID namespace of its own: a container's commands see and signal each other (Patchbay kills
    // a command's process group from a second exec), as they do in one Modal container.
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    ...Object.entries(env).flatMap(([name, value]) => ['--setenv', name, value]),
    '--chdir',
    spec.workdir,
    '--',
    ...spec.args,
  ];
  return spawn('bwrap', bwrapArgs, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
}
