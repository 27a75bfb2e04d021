import { lstat, readlink } from 'node:fs/promises';
import { SYSTEM_PATHS, type HostSystemEntry } from './bwrap-args.ts';

/**
 * Looks at /bin, /lib and friends once, so the sandbox mirrors the host: on merged-/usr systems
 * they are symlinks into /usr and must stay symlinks (binding them would follow the link).
 */
export async function probeHostSystem(paths: readonly string[] = SYSTEM_PATHS): Promise<HostSystemEntry[]> {
  const entries: HostSystemEntry[] = [];
  for (const path of paths) {
    const stats = await lstat(path).catch(() => undefined);
    if (!stats) continue;
    if (stats.isSymbolicLink()) entries.push({ path, kind: 'symlink', target: await readlink(path) });
    else if (stats.isDirectory()) entries.push({ path, kind: 'dir' });
  }
  return entries;
}
