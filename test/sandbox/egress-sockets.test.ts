import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEgressSockets } from '../../sandbox/egress-sockets.ts';
import { isMountPoint } from '../../sandbox/workspace-image.ts';
import { makeTempDir, removeDataDir } from './sandbox-test-helpers.ts';

const asRoot = process.getuid?.() === 0;

describe('egress sockets', () => {
  it('keeps the sockets in a private directory, its own tmpfs as root, removed at close', async () => {
    const tmp = await makeTempDir('egress-sockets');
    try {
      const sockets = createEgressSockets(tmp, asRoot ? { uid: 65533, gid: 65533 } : undefined);
      const first = await sockets.next();
      const second = await sockets.next();
      expect(path.dirname(second)).toBe(path.dirname(first));
      expect([path.basename(first), path.basename(second)]).toEqual(['1.sock', '2.sock']);
      const dir = path.dirname(first);
      expect(path.basename(dir)).toMatch(new RegExp(`^patchbay-egress-${process.pid}-`));
      expect(await isMountPoint(dir)).toBe(asRoot);
      expect((await stat(dir)).mode & 0o777).toBe(asRoot ? 0o710 : 0o700);
      await sockets.close();
      expect(await readdir(tmp)).toEqual([]);
    } finally {
      await removeDataDir(tmp);
    }
  });

  it("removes the directories of servers that are gone, and leaves a live server's", async () => {
    const tmp = await makeTempDir('egress-stale');
    try {
      // pid 2^22 + 1 is above the kernel's pid_max: no process has it.
      await mkdir(path.join(tmp, `patchbay-egress-${2 ** 22 + 1}-gone`));
      await mkdir(path.join(tmp, 'patchbay-egress-1-init'));
      const sockets = createEgressSockets(tmp, undefined);
      const socket = await sockets.next();
      expect((await readdir(tmp)).sort()).toEqual(
        ['patchbay-egress-1-init', path.basename(path.dirname(socket))].sort(),
      );
      await sockets.close();
    } finally {
      await removeDataDir(tmp);
    }
  });
});
