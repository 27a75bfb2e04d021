import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';

describe('sandbox limits from the environment, through startPatchbay', () => {
  let app: PatchbayFixture;
  beforeAll(async () => {
    app = await startTestPatchbay({
      env: {
        SANDBOX_MAX_PROCS: '77',
        SANDBOX_MEMORY_MB: '700',
        SANDBOX_CPU_SECONDS: '33',
        SANDBOX_FILE_MB: '55',
        SANDBOX_TMP_MB: '44',
      },
    });
  });
  afterAll(async () => {
    await app?.dispose();
  });

  it("applies them to every command of a session's sandbox", async () => {
    const sandbox = await app.sandboxes!.acquire('limits-from-env', { network: 'none' });
    try {
      const result = await sandbox.exec('prlimit --noheadings --output RESOURCE,SOFT,HARD; df -m /tmp | tail -1');
      expect(result.exitCode).toBe(0);
      const rows = Object.fromEntries(
        result.stdout
          .trim()
          .split('\n')
          .map((line) => line.trim().split(/\s+/))
          .map(([name, soft, hard]) => [name, `${soft}/${hard}`]),
      );
      expect(rows).toMatchObject({
        NPROC: '77/77',
        DATA: `${700 * 1024 * 1024}/${700 * 1024 * 1024}`,
        CPU: '33/38',
        FSIZE: `${55 * 1024 * 1024}/${55 * 1024 * 1024}`,
        CORE: '0/0',
      });
      expect(result.stdout).toMatch(/tmpfs\s+44\s/);
    } finally {
      await sandbox.destroy();
    }
  });
});
