import { readdir, readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/index.ts';
import { eventually, makeProvider } from './sandbox-test-helpers.ts';

/** Every command line and environment on the host this test process can read, joined. */
async function hostProcessList(): Promise<string> {
  const lines: string[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    lines.push(cmdline.split('\0').join(' '));
  }
  return lines.join('\n');
}

describe('what the host and the sandbox see of each other', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  let dataDir: string;

  beforeAll(async () => {
    ({ provider, cleanup, dataDir } = await makeProvider());
  });
  afterAll(async () => {
    await cleanup();
  });

  it("keeps host paths out of the sandbox's /proc/1/cmdline", async () => {
    const sandbox = await provider.acquire('cmdline-check', { network: 'none' });
    const result = await sandbox.exec('tr "\\0" " " < /proc/1/cmdline; echo; tr "\\0" " " < /proc/self/cmdline');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/bwrap/);
    expect(result.stdout).not.toContain(dataDir);
    expect(result.stdout).not.toContain(provider.hostPath('cmdline-check'));
    expect(result.stdout).not.toMatch(/--bind|--setenv|workspaces/);
    await sandbox.destroy();
  });

  it("keeps a running command's text and environment out of the host's process list", async () => {
    const sandbox = await provider.acquire('ps-check', { network: 'none' });
    const marker = `cmd-marker-${Date.now()}`;
    const secret = `env-secret-${Date.now()}`;
    const controller = new AbortController();
    const running = sandbox.exec(`echo ${marker} > started; sleep 30; : ${marker}`, {
      env: { PROBE_VALUE: secret },
      signal: controller.signal,
    });
    // Wait for the command to be running (its file appears), then look at every host process.
    expect(
      await eventually(
        async () =>
          (await readFile(`${provider.hostPath('ps-check')}/started`, 'utf8').catch(() => '')).includes(marker),
        10_000,
      ),
    ).toBe(true);
    const list = await hostProcessList();
    expect(list).toContain('/run/patchbay/command');
    expect(list).not.toContain(marker);
    expect(list).not.toContain(secret);
    expect(list).not.toContain(provider.hostPath('ps-check'));
    controller.abort();
    expect((await running).aborted).toBe(true);
    await sandbox.destroy();
  });

  it('sees only the parts of /usr that tools need: no /usr/local, no /usr/src', async () => {
    const sandbox = await provider.acquire('usr-check', { network: 'none' });
    const result = await sandbox.exec(
      'ls /usr; touch /usr/probe 2>/dev/null && echo usr-writable; test -e /usr/local && echo has-local; true',
    );
    const entries = result.stdout.trim().split('\n');
    expect(entries).toContain('bin');
    expect(entries).toContain('lib');
    expect(entries).toContain('share');
    expect(entries).not.toContain('local');
    expect(entries).not.toContain('src');
    expect(result.stdout).not.toContain('usr-writable');
    expect(result.stdout).not.toContain('has-local');
    await sandbox.destroy();
  });
});
