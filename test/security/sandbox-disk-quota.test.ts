import { execFileSync } from 'node:child_process';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../../sandbox/sandbox-limits.ts';
import { createShellTool } from '../../src/agent/shell-tool.ts';
import { makeProvider } from '../sandbox/sandbox-test-helpers.ts';

const MB = 1024 * 1024;
/** A quota far below the file size limit, so only the quota can stop these writes. */
const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, diskMb: 64, fileMb: 4096 };
const QUOTA_MESSAGE = /^Sandbox limit reached: the workspace reached its 64 MB disk quota/;
const asRoot = process.getuid?.() === 0;
const log = pino({ level: 'silent' });

/** Bytes the workspace takes, as `du` on the host counts them. */
function used(dir: string): number {
  return Number(execFileSync('du', ['-s', '-B1', '-x', dir], { encoding: 'utf8' }).split(/\s/)[0]);
}

/** Many small files from one process, in a fraction of a second: over before any look at the disk. */
const burst = (name: string, files: number, kb: number) =>
  `python3 -c "import os
os.makedirs('${name}', exist_ok=True)
for i in range(${files}): open('${name}/f%d' % i, 'wb').write(b'x' * ${kb * 1024})"`;

/**
 * The review's disk probes: SANDBOX_DISK_MB used to baseline its first look about a second in, so
 * what a command wrote before it never counted (three 600 MB commands left 1.8 GB against 300 MB).
 * Through the real provider and the shell tool, so the model's view of a stop is checked too; once
 * with each workspace a file system of its own (as root, the default) and once watched (a non-root
 * server's way).
 */
const MODES = asRoot ? (['filesystem', 'watch'] as const) : (['watch'] as const);
describe.each(MODES)('security probes: the disk quota holds from the first byte (%s)', (diskQuota) => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  const shell = createShellTool({ timeoutMs: 120_000, maxTimeoutMs: 120_000 });
  const sandboxes: Sandbox[] = [];
  const open = async (name: string) => {
    const sandbox = await provider.acquire(name, { network: 'none' });
    sandboxes.push(sandbox);
    return { sandbox, dir: provider.hostPath(name) };
  };
  const run = (sandbox: Sandbox, command: string) =>
    shell.execute({ command }, { sandbox, sessionId: sandbox.sessionId, signal: new AbortController().signal, log });

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider({ limits, diskQuota }));
    expect(provider.diskQuota).toBe(diskQuota);
  });
  afterAll(async () => {
    for (const sandbox of sandboxes) await sandbox.destroy();
    await cleanup();
  });

  it('stops one large file at the quota, three times over: the workspace never holds more than the quota', {
    timeout: 120_000,
  }, async () => {
    const { sandbox, dir } = await open('quota-large');
    for (const name of ['a', 'b', 'c']) {
      const result = await run(sandbox, `head -c 300M /dev/zero > ${name}.bin`);
      expect(result.content).toMatch(QUOTA_MESSAGE);
      expect(used(dir)).toBeLessThanOrEqual(limits.diskMb * MB + MB);
    }
  });

  it('counts what earlier commands wrote: a second command may add only what is left', {
    timeout: 120_000,
  }, async () => {
    const { sandbox, dir } = await open('quota-earlier');
    expect((await run(sandbox, 'head -c 40M /dev/zero > first.bin')).isError).toBe(false);
    const second = await run(sandbox, 'head -c 40M /dev/zero > second.bin');
    expect(second.content).toMatch(QUOTA_MESSAGE);
    expect(used(dir)).toBeLessThanOrEqual(limits.diskMb * MB + MB);
  });

  it('tells a command that ended before the first look at the disk, lets the workspace be cleaned up, and counts again from there', {
    timeout: 120_000,
  }, async () => {
    const { sandbox, dir } = await open('quota-cleanup');
    // 80 MB in 2 MB files: each file fits in what is left, all of them do not.
    expect((await run(sandbox, burst('out', 40, 2048))).content).toMatch(QUOTA_MESSAGE);
    expect((await run(sandbox, 'head -c 4M /dev/zero > more.bin')).content).toMatch(QUOTA_MESSAGE);
    expect((await run(sandbox, 'rm -rf out more.bin && echo cleaned')).content).toBe(
      'Exit code: 0\nstdout:\ncleaned\n',
    );
    expect(used(dir)).toBeLessThan(MB);
    expect((await run(sandbox, 'head -c 10M /dev/zero > fits.bin && echo fits')).content).toBe(
      'Exit code: 0\nstdout:\nfits\n',
    );
  });
});

/**
 * Many small files in one fast command, and one large file, as the review wrote them: with a file
 * system per workspace (as root) the kernel refuses the byte past the quota however fast the files
 * come; watched (a non-root server), one command can pass it by what it writes between two looks.
 */
describe('security probes: many small files in one fast command stop at the quota', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  const shell = createShellTool({ timeoutMs: 120_000, maxTimeoutMs: 120_000 });
  const run = (sandbox: Sandbox, command: string) =>
    shell.execute({ command }, { sandbox, sessionId: sandbox.sessionId, signal: new AbortController().signal, log });
  let sandbox: Sandbox;
  let dir: string;

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider({ limits }));
    sandbox = await provider.acquire('quota-burst', { network: 'none' });
    dir = provider.hostPath('quota-burst');
  });
  afterAll(async () => {
    await sandbox.destroy();
    await cleanup();
  });

  it('stops 20,000 files of 64 KiB (1.25 GB) written by one process at the quota, and the model is told', {
    timeout: 120_000,
  }, async () => {
    expect(provider.diskQuota).toBe(asRoot ? 'filesystem' : 'watch');
    const result = await run(sandbox, burst('burst', 20_000, 64));
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(QUOTA_MESSAGE);
    // A file system of its own never holds more than the quota; watched, one look's worth more.
    expect(used(dir)).toBeLessThanOrEqual(asRoot ? limits.diskMb * MB : (limits.diskMb + 200) * MB);
    // Cleaning up works, and the workspace is usable again.
    expect((await run(sandbox, 'rm -rf burst && head -c 10M /dev/zero > fits.bin && echo fits')).content).toBe(
      'Exit code: 0\nstdout:\nfits\n',
    );
  });

  it('stops one 2 GB file at the quota, and the model is told', { timeout: 120_000 }, async () => {
    const result = await run(sandbox, 'rm -f fits.bin; head -c 2G /dev/zero > large.bin');
    expect(result.content).toMatch(QUOTA_MESSAGE);
    expect(used(dir)).toBeLessThanOrEqual(limits.diskMb * MB + MB);
  });
});

/**
 * Watched (a non-root server), quick commands of many small files can each end before a look at
 * the disk: the one that took the workspace past the quota is still told, and so is every later one.
 */
describe('security probes: quick small-file commands against a watched quota', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  const shell = createShellTool({ timeoutMs: 120_000, maxTimeoutMs: 120_000 });
  const run = (sandbox: Sandbox, command: string) =>
    shell.execute({ command }, { sandbox, sessionId: sandbox.sessionId, signal: new AbortController().signal, log });
  let sandbox: Sandbox;

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider({ limits, diskQuota: 'watch' }));
    sandbox = await provider.acquire('quota-small-files', { network: 'none' });
  });
  afterAll(async () => {
    await sandbox.destroy();
    await cleanup();
  });

  it('holds many small files written by quick commands, and tells the command that crossed the quota', {
    timeout: 120_000,
  }, async () => {
    const dir = provider.hostPath('quota-small-files');
    const results = [];
    const usage: number[] = [];
    // Ten commands of 10 MB each, in 10 kB files; each takes a fraction of a second.
    for (let i = 0; i < 10; i++) {
      results.push(await run(sandbox, burst(`batch${i}`, 1000, 10)));
      usage.push(used(dir));
    }
    const stopped = results.findIndex((result) => QUOTA_MESSAGE.test(result.content));
    // The command that took the workspace past the quota is the one told so.
    expect(stopped, results.map((r) => r.content.slice(0, 80)).join('\n')).toBe(
      usage.findIndex((bytes) => bytes > limits.diskMb * MB),
    );
    expect(stopped).toBeGreaterThan(0);
    // Every command after the one that crossed the quota is stopped too, and adds nothing.
    expect(results.slice(stopped).every((result) => QUOTA_MESSAGE.test(result.content))).toBe(true);
    // At most one command's burst past the quota (10 MB, plus directory blocks).
    expect(used(dir)).toBeLessThanOrEqual((limits.diskMb + 12) * MB);
  });
});
