import { spawnSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir } from './sandbox-test-helpers.ts';

const asRoot = process.getuid?.() === 0;
const script = path.join(import.meta.dirname, 'scripts', 'start-provider.ts');

describe('starting the local sandbox where a root server cannot drop to the sandbox user', () => {
  let dataDir: string | undefined;
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('refuses to start with one actionable reason instead of running commands as host root', {
    timeout: 60_000,
  }, async () => {
    dataDir = await makeTempDir('no-sys-admin');
    // As root: without CAP_SYS_ADMIN (a container's root) the private mount namespace cannot be
    // made. Otherwise the server's own uid is the sandbox's, and the provider starts as before.
    const [file, args] = asRoot
      ? ['setpriv', ['--bounding-set=-sys_admin', '--inh-caps=-sys_admin', '--', process.execPath, script, dataDir]]
      : [process.execPath, [script, dataDir]];
    const child = spawnSync(file, args, { encoding: 'utf8', timeout: 60_000 });
    const report = JSON.parse(child.stdout) as {
      started: boolean;
      code?: string;
      message?: string;
      sandboxUid?: number | null;
    };
    if (asRoot) {
      expect(report).toMatchObject({ started: false, code: 'sandbox_unavailable' });
      expect(report.message).toMatch(
        /as root, sandbox commands run as uid 65533 from a private mount namespace, which this host refuses .*run Patchbay as a non-root user/,
      );
    } else {
      expect(report).toEqual({ started: true, sandboxUid: null });
    }
  });
});
