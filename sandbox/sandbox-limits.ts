/**
 * Resource limits of one sandbox command, and how a breach is reported to the model.
 * Enforcement is layered (see docs/configuration.md, "Sandbox limits"): rlimits set inside the sandbox always act
 * per process; a cgroup, where the host lets Patchbay make one, caps the whole command; a watch on
 * the command (limit-watch.ts) ends it when it reaches a cap and says which.
 */
export type SandboxLimits = {
  /** Processes and threads of one command together. */
  maxProcs: number;
  /** Memory of one command (cgroup), or of each of its processes and of all together (rlimit + watch). */
  memoryMb: number;
  /** CPU seconds each process of a command may use. */
  cpuSeconds: number;
  /** Largest file a command may write. */
  fileMb: number;
  /** Workspace disk quota: a command that grows the workspace past it is stopped. */
  diskMb: number;
  /** Size of the sandbox's private /tmp (which also holds HOME). */
  tmpMb: number;
};

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  maxProcs: 512,
  memoryMb: 3072,
  cpuSeconds: 600,
  fileMb: 4096,
  diskMb: 10240,
  tmpMb: 1024,
};

export type LimitKind = 'processes' | 'memory' | 'cpu' | 'file-size' | 'disk';

/** What ended a command, in words the model can act on. */
export type LimitHit = { kind: LimitKind; message: string };

const MB = 1024 * 1024;

export function limitHit(kind: LimitKind, limits: SandboxLimits): LimitHit {
  switch (kind) {
    case 'processes':
      return {
        kind,
        message: `the command reached the sandbox's limit of ${limits.maxProcs} processes and threads (a fork bomb, or too much parallelism: lower -j or worker counts) and was stopped`,
      };
    case 'memory':
      return {
        kind,
        message: `the command ran out of the sandbox's ${limits.memoryMb} MB memory limit and was stopped`,
      };
    case 'cpu':
      return {
        kind,
        message: `a process used up its ${limits.cpuSeconds} s of CPU time (the sandbox's per-process limit) and was killed`,
      };
    case 'file-size':
      return {
        kind,
        message: `a process tried to write a file larger than the sandbox's ${limits.fileMb} MB limit and was killed`,
      };
    case 'disk':
      return {
        kind,
        message: `the workspace reached its ${limits.diskMb} MB disk quota and the command was stopped: delete build output or caches you do not need`,
      };
    default: {
      const never: never = kind;
      return never;
    }
  }
}

/**
 * The rlimits the launcher inside the sandbox sets before running the command, as `prlimit`
 * options. They are set inside, after bubblewrap made the user namespace: since Linux 5.14
 * RLIMIT_NPROC counts the processes of a uid per user namespace, so the count is this command's
 * alone, not every process the server's user runs on the host. Soft and hard are equal (the command
 * cannot raise them); CPU gets a few seconds between SIGXCPU and SIGKILL. `fileBytes` is the file
 * size cap when the disk quota left is below SANDBOX_FILE_MB (see diskFileCap).
 */
export function prlimitOptions(limits: SandboxLimits, fileBytes = limits.fileMb * MB): string[] {
  return [
    `--nproc=${limits.maxProcs}`,
    `--data=${limits.memoryMb * MB}`,
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 5}`,
    `--fsize=${fileBytes}`,
    '--core=0',
  ];
}

/**
 * The largest file a command may write: SANDBOX_FILE_MB, or what is left of the workspace's disk
 * quota when that is less, so one large file stops at the quota from its first byte (the kernel
 * refuses the write past it) and a workspace at its quota cannot grow a file at all.
 */
export function diskFileCap(limits: SandboxLimits, usedBytes: number): number {
  return Math.max(0, Math.min(limits.fileMb * MB, limits.diskMb * MB - usedBytes));
}

/** Signals the per-process rlimits send, as the shell's exit status reports them (128 + signal). */
const SIGXCPU_EXIT = 128 + 24;
const SIGXFSZ_EXIT = 128 + 25;
/** What programs print when an allocation fails under RLIMIT_DATA (Python, C/C++, Node, Rust, Go, the JVM). */
const ALLOCATION_FAILED =
  /MemoryError|Cannot allocate memory|std::bad_alloc|out of memory|memory allocation of \d+ bytes failed|OutOfMemoryError|allocation failed/i;

/** What a program that ignores SIGXFSZ (Python) prints when the write fails with EFBIG instead. */
const FILE_TOO_LARGE = /File too large/;

/**
 * What shells (dash, bash, busybox), Python, Node and Go print when fork fails at RLIMIT_NPROC or
 * pids.max. RLIMIT_NPROC holds a root server's commands too (they run as the sandbox user), and it
 * may refuse before the cgroup counts a refusal of its own.
 */
const FORK_FAILED =
  /Cannot fork|fork: (retry: )?Resource temporarily unavailable|can't fork|BlockingIOError: \[Errno 11\]|spawn(Sync)? \S+ EAGAIN|fork\/exec .*resource temporarily unavailable/i;

/** Reads a finished command's exit for the per-process limits the kernel enforced by itself. */
export function limitFromExit(exitCode: number | null, stderr: string, limits: SandboxLimits): LimitHit | undefined {
  if (exitCode === SIGXCPU_EXIT) return limitHit('cpu', limits);
  if (exitCode === SIGXFSZ_EXIT || (exitCode !== 0 && exitCode !== null && FILE_TOO_LARGE.test(stderr)))
    return limitHit('file-size', limits);
  if (exitCode !== 0 && exitCode !== null && FORK_FAILED.test(stderr)) {
    return {
      kind: 'processes',
      message: `a process could not be started: the sandbox allows ${limits.maxProcs} processes and threads per command`,
    };
  }
  if (exitCode !== 0 && exitCode !== null && ALLOCATION_FAILED.test(stderr)) {
    return {
      kind: 'memory',
      message: `an allocation failed: the sandbox allows ${limits.memoryMb} MB of memory per command`,
    };
  }
  return undefined;
}
