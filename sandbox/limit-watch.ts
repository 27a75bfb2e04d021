import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import type { CommandCgroup } from './cgroup-limits.ts';
import { limitHit, type LimitHit, type SandboxLimits } from './sandbox-limits.ts';
import { FULL_BELOW_BYTES, imageUsage } from './workspace-image.ts';

const POLL_MS = 250;
const PAGE_BYTES = 4096;
const MB = 1024 * 1024;

export type LimitWatch = {
  /** The limit the watch stopped the command for, if any. */
  readonly hit: LimitHit | undefined;
  stop(): void;
};

/**
 * The workspace when a command started: a file system of its own (statfs says how full it is, in
 * one system call) or a folder counted with `du` (see DiskQuota in bwrap-launch.ts).
 */
export type DiskStart = { kind: 'filesystem' | 'watch'; startBytes: number };

export type LimitWatchInput = {
  /** Host pid of the bubblewrap process: every process of the command descends from it. */
  rootPid: number;
  limits: SandboxLimits;
  /** The command's cgroup, when limits are enforced with cgroups. */
  cgroup?: CommandCgroup;
  /** Host path of the workspace, for the disk quota. */
  workspace: string;
  /** How the quota holds, and the bytes the workspace took when the command started. */
  disk: DiskStart;
  /** Ends the command (kills its process tree). */
  kill: () => void;
};

/**
 * Watches a running command and ends it when it reaches a limit the kernel only holds it at
 * (a fork bomb stays at the process cap until the time limit; a hog outgrows memory in many
 * processes; a disk filler grows the workspace), so the command ends at once and the model is
 * told which limit it met. With a cgroup the kernel's own counters say so; with rlimits alone the
 * watch counts the command's process tree itself.
 */
export function watchLimits(input: LimitWatchInput): LimitWatch {
  const { limits } = input;
  let hit: LimitHit | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let atProcessCap = 0;
  let lastRefusals = 0;
  let nextDiskCheck = 0;
  // The whole workspace counts, from its first byte; one already over quota when the command
  // started (a command stopped at it) may still shrink, so only growth past that is stopped.
  const diskCap = Math.max(limits.diskMb * MB, input.disk.startBytes);

  const end = (next: LimitHit): void => {
    if (hit || stopped) return;
    hit = next;
    input.kill();
  };

  const checkProcesses = async (): Promise<void> => {
    if (input.cgroup) {
      const { forkRefusals, oomKills } = await input.cgroup.read();
      if (oomKills > 0) return end(limitHit('memory', limits));
      // A build may brush the cap once; forks refused on two looks in a row is a bomb.
      atProcessCap = forkRefusals > lastRefusals ? atProcessCap + 1 : 0;
      lastRefusals = forkRefusals;
      if (atProcessCap >= 2) end(limitHit('processes', limits));
      return;
    }
    const tree = await processTree(input.rootPid);
    if (tree.tasks >= limits.maxProcs - 2) {
      atProcessCap += 1;
      if (atProcessCap >= 2) return end(limitHit('processes', limits));
    } else atProcessCap = 0;
    if (tree.rssPages * PAGE_BYTES > limits.memoryMb * MB) end(limitHit('memory', limits));
  };

  const checkDisk = async (): Promise<void> => {
    if (input.disk.kind === 'filesystem') {
      // The kernel holds the quota; a command that filled the file system is stopped, not left retrying.
      const usage = await imageUsage(input.workspace);
      if (usage.freeBytes < FULL_BELOW_BYTES && usage.usedBytes > input.disk.startBytes) end(limitHit('disk', limits));
      return;
    }
    if (Date.now() < nextDiskCheck) return;
    const started = Date.now();
    const used = await diskUsage(input.workspace);
    // Walking a big tree costs: look less often the longer a look takes.
    nextDiskCheck = Date.now() + Math.max(POLL_MS, (Date.now() - started) * 10);
    if (used !== undefined && used > diskCap) end(limitHit('disk', limits));
  };

  const tick = async (): Promise<void> => {
    try {
      await checkProcesses();
      if (!hit) await checkDisk();
    } catch {
      // The command ended between looks; the next tick (if any) sees that.
    }
    if (!stopped && !hit) timer = setTimeout(() => void tick(), POLL_MS);
  };
  timer = setTimeout(() => void tick(), POLL_MS);

  return {
    get hit() {
      return hit;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** Tasks (processes and threads) and resident pages of a process and all its descendants. */
export async function processTree(rootPid: number): Promise<{ tasks: number; rssPages: number }> {
  let tasks = 0;
  let rssPages = 0;
  const queue = [rootPid];
  const seen = new Set<number>();
  while (queue.length) {
    const pid = queue.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const tids = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
    if (!tids.length) continue;
    tasks += tids.length;
    const statm = await readFile(`/proc/${pid}/statm`, 'utf8').catch(() => '');
    rssPages += Number(statm.split(' ')[1]) || 0;
    for (const tid of tids) {
      const children = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
      for (const child of children.split(' ')) if (child.trim()) queue.push(Number(child));
    }
  }
  return { tasks, rssPages };
}

/** Bytes the workspace takes on disk (`du`, in a child process so the server's loop stays free). */
export function diskUsage(path: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    execFile('du', ['-s', '-B1', '-x', path], { timeout: 60_000 }, (_error, stdout) => {
      const bytes = Number(stdout.split(/\s/)[0]);
      // du exits 1 when a file vanished under it; its total is still good.
      resolve(stdout && Number.isFinite(bytes) ? bytes : undefined);
    });
  });
}
