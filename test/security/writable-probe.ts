import type { Sandbox } from '../../sandbox/index.ts';

/** What a sandboxed process may do to one path, learned without writing to it. */
export type WritableProbe = {
  path: string;
  exists: boolean;
  /** `test -w` inside the sandbox: access(2) with W_OK, which honours read-only mounts, modes and the uid mapping. */
  writable: boolean;
  /** The mount the path lies on, as the sandbox's /proc/self/mountinfo shows it (undefined: none shown). */
  mountPoint: string | undefined;
  /** The mount's own options or its file system's say `ro`. */
  readOnlyMount: boolean;
};

type Mount = { point: string; readOnly: boolean };

/**
 * Probes paths for writability from inside the sandbox without writing anything (issue 36): a
 * security test must not change its host even when the sandbox under test is broken, so it asks
 * the kernel (`test -w`, the mount table) instead of trying a write and restoring what it wrote.
 */
export async function probeWritable(sandbox: Sandbox, paths: readonly string[]): Promise<WritableProbe[]> {
  const quoted = paths.map((p) => `'${p.replace(/'/g, `'\\''`)}'`).join(' ');
  const script = [
    'cat /proc/self/mountinfo',
    'echo ---',
    `for f in ${quoted}; do`,
    '  e=0; w=0; [ -e "$f" ] && e=1; [ -w "$f" ] && w=1',
    '  printf "%s %s %s\\n" "$e" "$w" "$(readlink -f "$f" 2>/dev/null || echo "$f")"',
    'done',
  ].join('\n');
  const result = await sandbox.exec(script);
  if (result.exitCode !== 0) throw new Error(`the writability probe failed: ${result.stderr}`);
  const [table = '', answers = ''] = result.stdout.split('\n---\n');
  const mounts = parseMountinfo(table);
  return answers
    .trim()
    .split('\n')
    .map((line, index) => {
      const [exists, writable, ...resolved] = line.split(' ');
      const mount = mountOf(mounts, resolved.join(' '));
      return {
        path: paths[index]!,
        exists: exists === '1',
        writable: writable === '1',
        mountPoint: mount?.point,
        readOnlyMount: mount?.readOnly ?? false,
      };
    });
}

/** The mounts of a mountinfo table: each line's mount point (octal escapes undone) and whether it is read-only. */
export function parseMountinfo(table: string): Mount[] {
  return table
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [left = '', right = ''] = line.split(' - ');
      const fields = left.split(' ');
      const superOptions = right.split(' ')[2] ?? '';
      const point = (fields[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(Number.parseInt(octal, 8)),
      );
      const readOnly = (fields[5] ?? '').split(',').includes('ro') || superOptions.split(',').includes('ro');
      return { point, readOnly };
    });
}

/** The last-mounted mount whose point contains `path` (later mounts cover earlier ones). */
function mountOf(mounts: readonly Mount[], path: string): Mount | undefined {
  const covering = mounts.filter((m) => m.point === '/' || path === m.point || path.startsWith(`${m.point}/`));
  return covering.reduce<Mount | undefined>(
    (best, m) => (best === undefined || m.point.length >= best.point.length ? m : best),
    undefined,
  );
}
