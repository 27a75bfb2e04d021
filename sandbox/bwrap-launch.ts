import { buildBwrapArgs, STANDARD_PATH, type BwrapArgsInput } from './bwrap-args.ts';
import { createCommandCgroup, type CgroupLayout, type CommandCgroup } from './cgroup-limits.ts';
import { diskUsage, watchLimits, type DiskStart, type LimitWatch } from './limit-watch.ts';
import { runProcess, type RunProcessInput } from './run-process.ts';
import type { ExecResult } from './sandbox.ts';
import { dropPrivilegesArgv, stageBinds, type SandboxIdentity } from './sandbox-user.ts';
import { diskFileCap, limitFromExit, limitHit, type LimitHit, type SandboxLimits } from './sandbox-limits.ts';
import { imageUsage, metFullImage } from './workspace-image.ts';

export type BwrapLaunchInput = Omit<BwrapArgsInput, 'fds'> & {
  bwrapPath: string;
  command: string;
  /** The compiled seccomp filter; undefined on an architecture it does not cover. */
  seccomp: Buffer | undefined;
  /** As root: the host uid bubblewrap and the command run as, and the stage of its bind sources. */
  identity?: SandboxIdentity;
  /** Per-command cgroups, when the host allows them; rlimits and the watch act either way. */
  cgroups: CgroupLayout | undefined;
  /** How the workspace's disk quota holds (see DiskQuota); measured now when unknown. */
  disk: DiskQuota;
  timeoutMs: number;
  maxOutputBytes: number;
  onStdout?: (chunk: Uint8Array) => void;
  signal?: AbortSignal;
  stdin?: string;
};

/**
 * How a workspace's disk quota holds. 'filesystem': the workspace is a file system of its own,
 * SANDBOX_DISK_MB large (workspace-image.ts); the kernel refuses the byte past it and Patchbay only
 * tells the command why. 'watch': Patchbay counts the workspace with `du` and stops a command that
 * grows it past the quota; `usedBytes` is carried from one command to the next.
 */
export type DiskQuota = { kind: 'filesystem' } | { kind: 'watch'; usedBytes: number | undefined };

const MB = 1024 * 1024;
const ARGS_FD = 3;
const COMMAND_FD = 4;
const SECCOMP_FD = 5;

/**
 * The launcher: joins the command's cgroups (the cgroup.procs files up to the first '--'), binds
 * the (source, mount point) pairs up to the second, mounts the read-only overlays (a directory to
 * name the layers from, the layers, the mount point) up to the third, then execs the rest, which
 * becomes bubblewrap. The overlays are mounted from a subshell, so the launcher's cwd stays '/'.
 */
const LAUNCHER =
  'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; ' +
  'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 125; shift 2; done; shift; ' +
  'while [ "$1" != -- ]; do (cd "$1" && mount -t overlay -o "ro,lowerdir=$2" overlay "$3") || exit 125; shift 3; done; shift; ' +
  'exec "$@"';

/**
 * Runs one command under bubblewrap. Its arguments, script and seccomp filter go in through pipes
 * (fds 3, 4, 5), so the host's process list shows `bwrap --args 3 -- prlimit … sh /run/patchbay/command`,
 * never the command or its environment. With cgroups, a two-line launcher joins the command's
 * cgroup before it execs bubblewrap, so every process of the command is born inside it. As root,
 * the launcher runs in a private mount namespace (unshare), shows the binds on the stage, and
 * drops to the sandbox user (setpriv) before bubblewrap starts.
 */
export async function runInBwrap(input: BwrapLaunchInput): Promise<ExecResult> {
  const disk = await diskStart(input.disk, input.workspaceHostPath, input.limits);
  const { fileBytes } = disk;
  const staged =
    input.identity && stageBinds(input.identity.stageDir, input.workspaceHostPath, input.readOnlyBinds ?? []);
  const { options, argv } = buildBwrapArgs({
    ...input,
    ...(staged && { workspaceHostPath: staged.workspaceHostPath, readOnlyBinds: staged.readOnlyBinds }),
    fileBytes,
    fds: { command: COMMAND_FD, ...(input.seccomp && { seccomp: SECCOMP_FD }) },
  });
  const extraFds = [
    Buffer.from(`${options.join('\0')}\0`),
    Buffer.from(input.command),
    ...(input.seccomp ? [input.seccomp] : []),
  ];
  const cgroup = input.cgroups ? await createCommandCgroup(input.cgroups, input.limits) : undefined;
  let watch: LimitWatch | undefined;
  try {
    const bwrap = [
      ...(input.identity ? dropPrivilegesArgv(input.identity.user) : []),
      input.bwrapPath,
      '--args',
      String(ARGS_FD),
      '--',
      ...argv,
    ];
    const script = [
      '/bin/sh',
      '-c',
      LAUNCHER,
      'patchbay-launch',
      ...(cgroup?.procsFiles ?? []),
      '--',
      ...(staged?.binds ?? []),
      '--',
      ...(staged?.overlays ?? []),
      '--',
      ...bwrap,
    ];
    const launch = staged
      ? { file: 'unshare', args: ['--mount', '--propagation', 'private', '--', ...script] }
      : cgroup
        ? { file: script[0]!, args: script.slice(1) }
        : { file: input.bwrapPath, args: bwrap.slice(1), argv0: 'bwrap' };
    const result = await runProcess({
      ...launch,
      // Not the workspace: bubblewrap's own cwd and PWD are what the sandbox's /proc/1 shows.
      cwd: '/',
      // bwrap itself gets no host variables either; --clearenv/--setenv decide what the command sees.
      env: { PATH: STANDARD_PATH },
      extraFds,
      timeoutMs: input.timeoutMs,
      maxOutputBytes: input.maxOutputBytes,
      ...streamOptions(input),
      onSpawn: (pid, kill) => {
        watch = watchLimits({
          rootPid: pid,
          limits: input.limits,
          workspace: input.workspaceHostPath,
          disk,
          kill,
          ...(cgroup && { cgroup }),
        });
      },
    });
    watch?.stop();
    const overQuota = await diskOverQuota(input.disk, disk, input.workspaceHostPath, result, input.limits);
    const limit =
      watch?.hit ??
      (result.timedOut || result.aborted ? undefined : await limitAfterExit(result, input.limits, cgroup));
    const quota = diskLimitOf(limit, { overQuota, fileBytes }, input.limits);
    return quota ? { ...result, limit: quota } : result;
  } finally {
    watch?.stop();
    // Removal waits for the namespace's last processes to be reaped; the result need not.
    void cgroup?.dispose();
  }
}

/**
 * The workspace's use when a command starts, and the largest file it may write: with a file system
 * of its own, SANDBOX_FILE_MB (the kernel holds the quota); watched, what is left of the quota, so
 * one large file stops at it from its first byte (see diskFileCap).
 */
async function diskStart(
  quota: DiskQuota,
  workspace: string,
  limits: SandboxLimits,
): Promise<DiskStart & { fileBytes: number }> {
  if (quota.kind === 'filesystem')
    return { kind: 'filesystem', startBytes: (await imageUsage(workspace)).usedBytes, fileBytes: limits.fileMb * MB };
  const startBytes = quota.usedBytes ?? (await diskUsage(workspace)) ?? 0;
  return { kind: 'watch', startBytes, fileBytes: diskFileCap(limits, startBytes) };
}

/**
 * Whether the command ended with the workspace at its quota: a file system of its own that it
 * filled, or that refused it a write (see metFullImage); watched, grown past the quota (many small
 * files in less than one look of the watch). Updates the watched count for the next command.
 */
async function diskOverQuota(
  quota: DiskQuota,
  start: DiskStart,
  workspace: string,
  result: ExecResult,
  limits: SandboxLimits,
): Promise<boolean> {
  if (quota.kind === 'filesystem') {
    const usage = await imageUsage(workspace).catch(() => undefined);
    return usage !== undefined && metFullImage(usage, start.startBytes, result);
  }
  quota.usedBytes = await diskUsage(workspace);
  return quota.usedBytes !== undefined && quota.usedBytes > Math.max(limits.diskMb * MB, start.startBytes);
}

/**
 * The disk quota over the other limits: a file stopped at a cap lowered to the quota left, or a
 * command that ended at the quota (see diskOverQuota). The next watched command then cannot grow
 * any file (diskFileCap); on a file system of its own none can either (the kernel has no room).
 */
function diskLimitOf(
  limit: LimitHit | undefined,
  disk: { overQuota: boolean; fileBytes: number },
  limits: SandboxLimits,
): LimitHit | undefined {
  if (limit?.kind === 'file-size' && disk.fileBytes < limits.fileMb * MB) return limitHit('disk', limits);
  if (limit) return limit;
  return disk.overQuota ? limitHit('disk', limits) : undefined;
}

/**
 * The limit a finished command met, read after it ended: a fork bomb whose processes all give up
 * when fork fails can end between two looks of the watch, so a failed command the cgroup refused
 * forks to counts as stopped at the process cap too.
 */
async function limitAfterExit(
  result: ExecResult,
  limits: SandboxLimits,
  cgroup: CommandCgroup | undefined,
): Promise<LimitHit | undefined> {
  const fromExit = limitFromExit(result.exitCode, result.stderr, limits);
  if (fromExit || !cgroup || result.exitCode === 0) return fromExit;
  const { forkRefusals } = await cgroup.read().catch(() => ({ forkRefusals: 0 }));
  return forkRefusals > 0 ? limitHit('processes', limits) : undefined;
}

/** The command's signal, stdin and stdout listener, those of them it has. */
function streamOptions(input: BwrapLaunchInput): Pick<RunProcessInput, 'signal' | 'stdin' | 'onStdout'> {
  return {
    ...(input.signal && { signal: input.signal }),
    ...(input.stdin !== undefined && { stdin: input.stdin }),
    ...(input.onStdout && { onStdout: input.onStdout }),
  };
}
