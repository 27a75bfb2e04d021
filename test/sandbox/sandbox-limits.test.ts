import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../../sandbox/sandbox-limits.ts';
import { createShellTool } from '../../src/agent/shell-tool.ts';
import { makeProvider } from './sandbox-test-helpers.ts';

const limits: SandboxLimits = {
  ...DEFAULT_SANDBOX_LIMITS,
  maxProcs: 64,
  memoryMb: 512,
  cpuSeconds: 2,
  fileMb: 50,
  diskMb: 200,
  tmpMb: 64,
};
const log = pino({ level: 'silent' });

/** A healthy build-like command: twenty short processes, a file, a line of output. */
const HEALTHY = 'for i in $(seq 20); do sh -c "sleep 0.3" & done; wait; echo fine > healthy.txt; cat healthy.txt';

describe('sandbox resource limits, through the real sandbox and the shell tool', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  let victim: Sandbox;
  let neighbour: Sandbox;
  const shell = createShellTool({ timeoutMs: 120_000, maxTimeoutMs: 120_000 });
  const run = (sandbox: Sandbox, command: string) =>
    shell.execute({ command }, { sandbox, sessionId: sandbox.sessionId, signal: new AbortController().signal, log });

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider({ limits }));
    victim = await provider.acquire('limits-victim', { network: 'none' });
    neighbour = await provider.acquire('limits-neighbour', { network: 'none' });
  });
  afterAll(async () => {
    await victim.destroy();
    await neighbour.destroy();
    await cleanup();
  });

  it('holds this host to a process count it can enforce', () => {
    // The kernel exempts uid 0 from RLIMIT_NPROC: commands must not run as it (as root they run as the sandbox user).
    const commandUid = provider.sandboxUser?.uid ?? process.getuid?.();
    expect(
      provider.enforcement === 'rlimit' && commandUid === 0,
      `enforcement ${provider.enforcement} as uid ${commandUid}`,
    ).toBe(false);
  });

  it('ends a fork bomb with a clear message while another session completes its own work', {
    timeout: 120_000,
  }, async () => {
    // The shell policy refuses the textbook `:(){ :|:& };:`; this one it cannot recognise.
    const [bomb, healthy] = await Promise.all([
      run(victim, 'python3 -c "import os\nwhile True: os.fork()"'),
      run(neighbour, HEALTHY),
    ]);
    expect(bomb.isError).toBe(true);
    expect(bomb.content).toMatch(/^Sandbox limit reached: .*64 processes and threads/);
    expect(healthy).toEqual({ content: 'Exit code: 0\nstdout:\nfine\n', isError: false });
    // And the bombed session itself is usable again.
    expect(await run(victim, 'echo back')).toEqual({ content: 'Exit code: 0\nstdout:\nback\n', isError: false });
  });

  it('ends a 4 GB allocation, and a hog spread over processes, with a clear message while another session completes', {
    timeout: 120_000,
  }, async () => {
    const [allocation, healthy] = await Promise.all([
      run(victim, 'python3 -c "b = bytearray(4 * 1024 ** 3)"'),
      run(neighbour, HEALTHY),
    ]);
    expect(allocation.content).toMatch(/^Sandbox limit reached: .*512 MB of memory/);
    expect(healthy.isError).toBe(false);
    const spread = await run(
      victim,
      'for i in 1 2 3 4; do python3 -c "import time; b = bytearray(200 * 2 ** 20); time.sleep(60)" & done; wait',
    );
    expect(spread.content).toMatch(
      /^Sandbox limit reached: the command ran out of the sandbox's 512 MB memory limit and was stopped/,
    );
  });

  it('ends a 20 GB file at the file size limit and a disk filler at the workspace quota', {
    timeout: 120_000,
  }, async () => {
    const big = await run(victim, 'head -c 20G /dev/zero > big.bin');
    expect(big.content).toMatch(
      /^Sandbox limit reached: a process tried to write a file larger than the sandbox's 50 MB limit/,
    );
    await run(victim, 'rm -f big.bin');
    const [filler, healthy] = await Promise.all([
      run(victim, 'i=0; while head -c 10485760 /dev/zero > fill-$i.bin; do i=$((i+1)); done'),
      run(neighbour, HEALTHY),
    ]);
    expect(filler.content).toMatch(/^Sandbox limit reached: the workspace reached its 200 MB disk quota/);
    expect(healthy.isError).toBe(false);
    // Cleaning up is still possible in a workspace over its quota.
    expect((await run(victim, 'rm -f fill-*.bin && echo cleaned')).content).toContain('cleaned');
  });

  it('kills a process that uses up its CPU time, and bounds /tmp', { timeout: 120_000 }, async () => {
    const spin = await run(victim, 'python3 -c "while True: pass"');
    expect(spin.content).toMatch(/^Sandbox limit reached: a process used up its 2 s of CPU time/);
    const tmp = await run(victim, 'head -c 40M /dev/zero > /tmp/a && head -c 40M /dev/zero > /tmp/b; echo "exit $?"');
    expect(tmp.content).toMatch(/exit [1-9]/);
    expect(tmp.content).toMatch(/No space left on device/);
  });
});
