import { buildBwrapArgs, STANDARD_PATH, type BwrapArgsInput } from './bwrap-args.ts';
import { createCommandCgroup, type CgroupLayout, type CommandCgroup } from './cgroup-limits.ts';
import { watchLimits, type LimitWatch } from './limit-watch.ts';
import { runProcess } from './run-process.ts';
import type { ExecResult } from './sandbox.ts';
import { limitFromExit, limitHit, type LimitHit, type SandboxLimits } from './sandbox-limits.ts';

export type BwrapLaunchInput = Omit<BwrapArgsInput, 'fds'> & {
  bwrapPath: string;
  command: string;
  /** The compiled seccomp filter; undefined on an architecture it does not cover. */
  seccomp: Buffer | undefined;
  /** Per-command cgroups, when the host allows them; rlimits and the watch act either way. */
  cgroups: CgroupLayout | undefined;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  stdin?: string;
};

const ARGS_FD = 3;
const COMMAND_FD = 4;
const SECCOMP_FD = 5;

/**
 * Runs one command under bubblewrap. Its arguments, script and seccomp filter go in through pipes
 * (fds 3, 4, 5), so the host's process list shows `bwrap --args 3 -- prlimit … sh /run/patchbay/command`,
 * never the command or its environment. With cgroups, a two-line launcher joins the command's
 * cgroup before it execs bubblewrap, so every process of the command is born inside it.
 */
export async function runInBwrap(input: BwrapLaunchInput): Promise<ExecResult> {
  const { options, argv } = buildBwrapArgs({ ...input, fds: { command: COMMAND_FD, ...(input.seccomp && { seccomp: SECCOMP_FD }) } });
  const extraFds = [Buffer.from(`${options.join('\0')}\0`), Buffer.from(input.command), ...(input.seccomp ? [input.seccomp] : [])];
  const cgroup = input.cgroups ? await createCommandCgroup(input.cgroups, input.limits) : undefined;
  let watch: LimitWatch | undefined;
  try {
    const launch = cgroup
      ? {
          file: '/bin/sh',
          // $1: bwrap; then the cgroup.procs files up to '--'; then bwrap's argv.
          args: [
            '-c',
            `b=$1; shift; while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$b" --args ${ARGS_FD} -- "$@"`,
            'patchbay-launch',
            input.bwrapPath,
            ...cgroup.procsFiles,
            '--',
            ...argv,
          ],
        }
      : { file: input.bwrapPath, args: ['--args', String(ARGS_FD), '--', ...argv], argv0: 'bwrap' };
    const result = await runProcess({
      ...launch,
      cwd: input.workspaceHostPath,
      // bwrap itself gets no host variables either; --clearenv/--setenv decide what the command sees.
      env: { PATH: STANDARD_PATH },
      extraFds,
      timeoutMs: input.timeoutMs,
      maxOutputBytes: input.maxOutputBytes,
      ...(input.signal && { signal: input.signal }),
      ...(input.stdin !== undefined && { stdin: input.stdin }),
      onSpawn: (pid, kill) => {
        watch = watchLimits({ rootPid: pid, limits: input.limits, workspace: input.workspaceHostPath, kill, ...(cgroup && { cgroup }) });
      },
    });
    watch?.stop();
    const limit = watch?.hit ?? (result.timedOut || result.aborted ? undefined : await limitAfterExit(result, input.limits, cgroup));
    return limit ? { ...result, limit } : result;
  } finally {
    watch?.stop();
    // Removal waits for the namespace's last processes to be reaped; the result need not.
    void cgroup?.dispose();
  }
}

/**
 * The limit a finished command met, read after it ended: a fork bomb whose processes all give up
 * when fork fails can end between two looks of the watch, so a failed command the cgroup refused
 * forks to counts as stopped at the process cap too.
 */
async function limitAfterExit(result: ExecResult, limits: SandboxLimits, cgroup: CommandCgroup | undefined): Promise<LimitHit | undefined> {
  const fromExit = limitFromExit(result.exitCode, result.stderr, limits);
  if (fromExit || !cgroup || result.exitCode === 0) return fromExit;
  const { forkRefusals } = await cgroup.read().catch(() => ({ forkRefusals: 0 }));
  return forkRefusals > 0 ? limitHit('processes', limits) : undefined;
}
