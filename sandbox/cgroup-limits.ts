import { randomBytes } from 'node:crypto';
import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxLimits } from './sandbox-limits.ts';

/**
 * Where the host lets Patchbay make cgroups, each sandbox command gets its own, capping memory and
 * processes for the command as a whole. cgroup v2 needs a delegated subtree (systemd `Delegate=yes`,
 * or a container with its own writable cgroup namespace); a v1 host (pids and memory hierarchies
 * writable, usually only as root) works the same way. Anything else falls back to rlimits.
 */
export type CgroupLayout = { version: 2; base: string } | { version: 1; pids: string; memory: string };

/** One command's cgroup(s). */
export type CommandCgroup = {
  /** The `cgroup.procs` files the launcher writes its pid into before it execs bubblewrap. */
  procsFiles: string[];
  /** Counters read by the watch: fork refusals at pids.max, OOM kills. */
  read(): Promise<{ forkRefusals: number; oomKills: number }>;
  /** Removes the cgroup once its processes are gone. */
  dispose(): Promise<void>;
};

export type CgroupProbe = { layout: CgroupLayout } | { layout: undefined; reason: string };

type ProbeInput = { cgroupRoot?: string; selfCgroup?: string; pid?: number };

/** Finds a cgroup layout this process can use, preparing it (v2: moving itself into a leaf). */
export async function probeCgroups(input: ProbeInput = {}): Promise<CgroupProbe> {
  const root = input.cgroupRoot ?? '/sys/fs/cgroup';
  const pid = input.pid ?? process.pid;
  const selfText = input.selfCgroup ?? (await readFile('/proc/self/cgroup', 'utf8').catch(() => ''));
  const lines = selfText
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(':'));
  const unified = lines.find(([id]) => id === '0')?.[2];
  const reasons: string[] = [];
  if (unified !== undefined) {
    for (const mount of [root, join(root, 'unified')]) {
      if (!(await exists(join(mount, 'cgroup.controllers')))) continue;
      const v2 = await prepareV2(join(mount, unified), pid);
      if ('base' in v2) return { layout: { version: 2, base: v2.base } };
      reasons.push(`cgroup v2 at ${mount}: ${v2.reason}`);
    }
  }
  const pidsPath = lines.find(([, controllers]) => controllers?.split(',').includes('pids'))?.[2];
  const memoryPath = lines.find(([, controllers]) => controllers?.split(',').includes('memory'))?.[2];
  if (pidsPath !== undefined && memoryPath !== undefined) {
    const v1 = await prepareV1(join(root, 'pids', pidsPath), join(root, 'memory', memoryPath), pid);
    if ('pids' in v1) return { layout: { version: 1, ...v1 } };
    reasons.push(`cgroup v1: ${v1.reason}`);
  }
  return { layout: undefined, reason: reasons.join('; ') || 'no cgroup with the memory and pids controllers' };
}

/** Removes the (empty) sandbox cgroups that servers which are gone left under `dir`. */
async function removeStale(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const owner = /^patchbay-sandboxes-(\d+)$/.exec(name)?.[1];
    if (!owner || alive(Number(owner))) continue;
    const base = join(dir, name);
    for (const child of await readdir(base, { withFileTypes: true }).catch(() => [])) {
      if (child.isDirectory()) await rmdir(join(base, child.name)).catch(() => {});
    }
    await rmdir(base).catch(() => {});
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function prepareV2(own: string, pid: number): Promise<{ base: string } | { reason: string }> {
  try {
    const controllers = (await readFile(join(own, 'cgroup.controllers'), 'utf8')).split(/\s+/);
    const missing = ['memory', 'pids'].filter((c) => !controllers.includes(c));
    if (missing.length) return { reason: `controllers ${missing.join(', ')} are not delegated to ${own}` };
    // "No internal processes": before its children can have controllers, this cgroup's own
    // processes (this server, and in a container its init) move into a leaf of their own.
    const procs = (await readFile(join(own, 'cgroup.procs'), 'utf8')).split('\n').filter(Boolean);
    if (procs.length) {
      const leaf = join(own, 'patchbay-server');
      await mkdir(leaf, { recursive: true });
      for (const p of procs) await writeFile(join(leaf, 'cgroup.procs'), p).catch(() => {});
      const left = (await readFile(join(own, 'cgroup.procs'), 'utf8')).split('\n').filter(Boolean);
      if (left.includes(String(pid))) return { reason: `cannot move this process out of ${own}` };
    }
    await writeFile(join(own, 'cgroup.subtree_control'), '+memory +pids');
    await removeStale(own);
    const base = join(own, `patchbay-sandboxes-${pid}`);
    await mkdir(base, { recursive: true });
    await writeFile(join(base, 'cgroup.subtree_control'), '+memory +pids');
    return { base };
  } catch (error) {
    return { reason: (error as Error).message };
  }
}

async function prepareV1(
  pidsOwn: string,
  memoryOwn: string,
  pid: number,
): Promise<{ pids: string; memory: string } | { reason: string }> {
  const pids = join(pidsOwn, `patchbay-sandboxes-${pid}`);
  const memory = join(memoryOwn, `patchbay-sandboxes-${pid}`);
  try {
    await removeStale(pidsOwn);
    await removeStale(memoryOwn);
    await mkdir(pids, { recursive: true });
    await mkdir(memory, { recursive: true });
    await access(join(pids, 'pids.max'));
    await access(join(memory, 'memory.limit_in_bytes'));
    return { pids, memory };
  } catch (error) {
    await rmdir(pids).catch(() => {});
    await rmdir(memory).catch(() => {});
    return { reason: (error as Error).message };
  }
}

/** Makes the cgroup of one command with its caps set. */
export async function createCommandCgroup(layout: CgroupLayout, limits: SandboxLimits): Promise<CommandCgroup> {
  const name = `cmd-${randomBytes(6).toString('hex')}`;
  const memoryBytes = String(limits.memoryMb * 1024 * 1024);
  if (layout.version === 2) {
    const dir = join(layout.base, name);
    await mkdir(dir);
    await writeFile(join(dir, 'pids.max'), String(limits.maxProcs));
    await writeFile(join(dir, 'memory.max'), memoryBytes);
    await writeFile(join(dir, 'memory.swap.max'), '0').catch(() => {});
    return {
      procsFiles: [join(dir, 'cgroup.procs')],
      read: async () => ({
        forkRefusals: counter(await readFile(join(dir, 'pids.events'), 'utf8').catch(() => ''), 'max'),
        oomKills: counter(await readFile(join(dir, 'memory.events'), 'utf8').catch(() => ''), 'oom_kill'),
      }),
      dispose: () => removeWhenEmpty([dir]),
    };
  }
  const pids = join(layout.pids, name);
  const memory = join(layout.memory, name);
  await mkdir(pids);
  await mkdir(memory);
  await writeFile(join(pids, 'pids.max'), String(limits.maxProcs));
  await writeFile(join(memory, 'memory.limit_in_bytes'), memoryBytes);
  // No swap either, where the kernel accounts it (memsw must be set after the memory limit).
  await writeFile(join(memory, 'memory.memsw.limit_in_bytes'), memoryBytes).catch(() => {});
  return {
    procsFiles: [join(pids, 'cgroup.procs'), join(memory, 'cgroup.procs')],
    read: async () => ({
      forkRefusals: counter(await readFile(join(pids, 'pids.events'), 'utf8').catch(() => ''), 'max'),
      oomKills: counter(await readFile(join(memory, 'memory.oom_control'), 'utf8').catch(() => ''), 'oom_kill'),
    }),
    dispose: () => removeWhenEmpty([pids, memory]),
  };
}

/** Removes the command's cgroups; the kernel refuses (EBUSY) while exiting processes are still in them. */
async function removeWhenEmpty(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || attempt >= 50) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }
}

/** `key value` lines (pids.events, memory.events, memory.oom_control): the value for `key`. */
export function counter(text: string, key: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${key} `));
  return line ? Number(line.split(/\s+/)[1]) || 0 : 0;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
