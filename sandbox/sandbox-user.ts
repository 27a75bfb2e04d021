import { chown, chmod, lstat, mkdir, mkdtemp, readdir, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';
import { runProcess } from './run-process.ts';

/**
 * The host uid and gid sandbox commands run as when Patchbay itself runs as root. Without one,
 * bubblewrap maps the sandbox's uid to the invoking uid: as root that is host uid 0, which owns
 * /proc/sys (kernel.core_pattern: a workspace script run by the kernel as root), every root-owned
 * file a bind shows, and is exempt from RLIMIT_NPROC. With one, bubblewrap itself is started as
 * this uid (setpriv), so it builds an unprivileged user namespace and nothing inside is host root.
 */
export type SandboxUser = { uid: number; gid: number };

/**
 * Below nobody (65534), above systemd's dynamic users (61184-65519) and in Debian's reserved block,
 * so no distribution account has it; SANDBOX_UID picks another (a dedicated `useradd -r` user).
 */
export const DEFAULT_SANDBOX_USER: SandboxUser = { uid: 65533, gid: 65533 };

/**
 * The uid sandbox commands run as on this host: `configured` (or the default) when the server is
 * root, none (bubblewrap maps to the server's own unprivileged uid) otherwise. Uid or gid 0 is refused.
 */
export function sandboxUserFor(
  serverUid: number | undefined,
  configured: SandboxUser | undefined,
): SandboxUser | undefined {
  if (serverUid !== 0) return undefined;
  const user = configured ?? DEFAULT_SANDBOX_USER;
  if (user.uid === 0 || user.gid === 0) {
    throw new PatchbayError(
      'config_invalid',
      'SANDBOX_UID and SANDBOX_GID must not be 0: sandbox commands never run as host root',
    );
  }
  return user;
}

/**
 * As root: the user commands run as, and the stage where each command's private mount namespace
 * shows bubblewrap its bind sources. bubblewrap, started as that user, resolves every bind source
 * with the user's permissions, and DATA_DIR (or a parent: /root, a temp dir) is not theirs to
 * search; the stage is, and it shows only this command's workspace and mirror objects.
 */
export type SandboxIdentity = { user: SandboxUser; stageDir: string };

/**
 * Read-only binds a command may have (the mirror's objects, the three engines' CLIs, Claude Code's
 * managed settings, one spare): one mount point each on the stage.
 */
const STAGE_READ_ONLY_SLOTS = 6;

/** An empty directory on the stage: the second, empty layer of each read-only overlay (see stageBinds). */
const STAGE_EMPTY = 'empty';

const STAGE_SLOTS = [
  'workspace',
  STAGE_EMPTY,
  ...Array.from({ length: STAGE_READ_ONLY_SLOTS }, (_, i) => [`src-${i}`, `ro-${i}`]).flat(),
];

/**
 * Makes the stage: searchable, not listable, by everyone; mount points private to root. Named
 * after this process, so stages of servers that are gone (killed before close) are removed here.
 */
export async function makeStageDir(tmp: string): Promise<string> {
  await removeStaleStages(tmp);
  const stage = await mkdtemp(path.join(tmp, `patchbay-stage-${process.pid}-`));
  await chmod(stage, 0o711);
  for (const name of STAGE_SLOTS) await mkdir(path.join(stage, name), { mode: 0o700 });
  return stage;
}

/** Only empty mount points, owned by this uid, of processes that are gone; rmdir, never a recursive remove. */
async function removeStaleStages(tmp: string): Promise<void> {
  for (const name of await readdir(tmp).catch(() => [] as string[])) {
    const pid = /^patchbay-stage-(\d+)-/.exec(name)?.[1];
    if (!pid || isAlive(Number(pid))) continue;
    const stage = path.join(tmp, name);
    const stats = await lstat(stage).catch(() => undefined);
    if (!stats?.isDirectory() || stats.uid !== process.getuid?.()) continue;
    for (const slot of STAGE_SLOTS) await rmdir(path.join(stage, slot)).catch(() => {});
    await rmdir(stage).catch(() => {});
  }
}

/** Whether a process with this pid exists (one of another uid counts too). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The binds of one command moved onto the stage, for the launcher to make as root: `binds`
 * (source, mount point pairs), then `overlays` (directory, layers, mount point triples, see
 * LAUNCHER in bwrap-launch.ts), and the staged paths bubblewrap is given instead of the host ones.
 *
 * A bind's root in the mount table is its source's path on its file system, so a read-only bind
 * (the mirror's objects, under DATA_DIR) is shown to bubblewrap as a read-only overlay instead: a
 * file system of its own, whose root is `/` and whose layers are named relative to the stage
 * (`src-0:empty`), so the sandbox's /proc/self/mountinfo names no host path for it.
 */
export function stageBinds(
  stageDir: string,
  workspaceHostPath: string,
  readOnlyBinds: readonly { hostPath: string; sandboxPath: string }[],
): StagedBinds {
  if (readOnlyBinds.length > STAGE_READ_ONLY_SLOTS)
    throw new PatchbayError('sandbox_failed', `at most ${STAGE_READ_ONLY_SLOTS} read-only binds per command`);
  const workspace = path.join(stageDir, 'workspace');
  const staged = readOnlyBinds.map((bind, i) => ({
    hostPath: path.join(stageDir, `ro-${i}`),
    sandboxPath: bind.sandboxPath,
  }));
  const binds = [
    workspaceHostPath,
    workspace,
    ...readOnlyBinds.flatMap((bind, i) => [bind.hostPath, path.join(stageDir, `src-${i}`)]),
  ];
  const overlays = staged.flatMap((bind, i) => [stageDir, `src-${i}:${STAGE_EMPTY}`, bind.hostPath]);
  return { binds, overlays, workspaceHostPath: workspace, readOnlyBinds: staged };
}

/** What stageBinds returns: the launcher's mounts, and the paths bubblewrap binds from them. */
export type StagedBinds = {
  binds: string[];
  overlays: string[];
  workspaceHostPath: string;
  readOnlyBinds: { hostPath: string; sandboxPath: string }[];
};

/**
 * The launcher's prefix that drops to the sandbox user before bubblewrap starts: real and effective
 * ids, no supplementary groups (root's would follow), no capabilities to inherit or regain.
 */
export function dropPrivilegesArgv(user: SandboxUser): string[] {
  return [
    'setpriv',
    `--reuid=${user.uid}`,
    `--regid=${user.gid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--',
  ];
}

/**
 * Gives the workspace tree to the sandbox user: what the host wrote there as root (the clone, a
 * spare checkout) must be writable inside. `chown -R -h` never follows a symlink the sandbox made,
 * and walks with openat, so a directory swapped for a symlink mid-walk is not followed either.
 */
export async function handOverTree(dir: string, user: SandboxUser, signal?: AbortSignal): Promise<void> {
  const result = await runProcess({
    file: 'chown',
    args: ['-R', '-h', `${user.uid}:${user.gid}`, '--', dir],
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: 120_000,
    maxOutputBytes: 4096,
    ...(signal && { signal }),
  });
  // chown exits 1 when a file vanished under it (a command deleting its build output): harmless.
  if (result.exitCode !== 0 && !/No such file/.test(result.stderr)) {
    throw new PatchbayError(
      'sandbox_failed',
      `could not give the workspace to the sandbox user ${user.uid}: ${result.stderr.trim() || `exit ${result.exitCode}`}`,
    );
  }
}

/**
 * A directory only its owner can use, or, with a sandbox user, also searchable (not listable) by
 * the sandbox's group: bubblewrap, started as that user, resolves bind sources below it.
 */
export async function makePrivateDir(dir: string, user: SandboxUser | undefined): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (user) await chown(dir, 0, user.gid);
  await chmod(dir, user ? 0o710 : 0o700);
}
