import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { eventually, pidsWithMarker, uniqueSleepSeconds } from '../sandbox/sandbox-test-helpers.ts';

const asRoot = process.getuid?.() === 0;
const CONFIGURED = { uid: 4343, gid: 4344 };

/**
 * The sandbox user as an operator sets it: SANDBOX_UID and SANDBOX_GID in the environment, through
 * loadConfig and startPatchbay, then a session's command seen from the host.
 */
describe('security probes: SANDBOX_UID and SANDBOX_GID, through the composition a user runs', () => {
  let app: PatchbayFixture;
  beforeAll(async () => {
    app = await startTestPatchbay({
      env: { SANDBOX_UID: String(CONFIGURED.uid), SANDBOX_GID: String(CONFIGURED.gid) },
    });
  });
  afterAll(async () => {
    await app?.dispose();
  });

  it("runs a session's commands as the configured host ids (as root), or as the server's own (otherwise)", async () => {
    const sandbox = await app.sandboxes!.acquire('uid-from-env', { network: 'none' });
    try {
      const marker = uniqueSleepSeconds();
      const stop = new AbortController();
      const running = sandbox.exec(`sleep ${marker}`, { signal: stop.signal, timeoutMs: 30_000 });
      expect(await eventually(async () => (await pidsWithMarker(`sleep ${marker}`)).length > 0)).toBe(true);
      const [pid] = await pidsWithMarker(`sleep ${marker}`);
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      stop.abort();
      await running;
      const uids = /^Uid:\s+(.*)$/m.exec(status)![1]!.split(/\s+/);
      const gids = /^Gid:\s+(.*)$/m.exec(status)![1]!.split(/\s+/);
      const expected = asRoot ? CONFIGURED : { uid: process.getuid?.(), gid: process.getgid?.() };
      expect(new Set(uids)).toEqual(new Set([String(expected.uid)]));
      expect(new Set(gids)).toEqual(new Set([String(expected.gid)]));
    } finally {
      await sandbox.destroy();
    }
  });

  it('refuses uid or gid 0 as the sandbox user at start, with the setting named', () => {
    expect(() => loadConfig({ SANDBOX_UID: '0' })).toThrow(/SANDBOX_UID/);
    expect(() => loadConfig({ SANDBOX_UID: '4343', SANDBOX_GID: '0' })).toThrow(/SANDBOX_GID/);
  });
});
