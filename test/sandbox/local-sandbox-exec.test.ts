import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxMode, LocalSandboxProvider } from '../../sandbox/index.ts';
import { eventually, makeProvider, pidsWithMarker, uniqueSleepSeconds } from './sandbox-test-helpers.ts';

// The exec contract is the same in both modes; only isolation differs.
describe.each<LocalSandboxMode>(['bwrap', 'unsafe-local'])('exec (%s)', (mode) => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider({ mode }));
  });
  afterAll(() => cleanup());

  it('reports exit codes and stderr without throwing', async () => {
    const sandbox = await provider.acquire('exit-code', { network: 'none' });
    const result = await sandbox.exec('echo out; echo err >&2; exit 3');
    expect(result).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false, aborted: false });
    expect(result.truncatedBytes).toEqual({ stdout: 0, stderr: 0 });
    await sandbox.release();
  });

  it('feeds stdin, runs in a workspace-relative cwd and refuses a cwd outside', async () => {
    const sandbox = await provider.acquire('stdin-cwd', { network: 'none' });
    await sandbox.writeFile('pkg/sub/.keep', '');
    const piped = await sandbox.exec('tr a-z A-Z', { stdin: 'hello stdin' });
    expect(piped.stdout).toBe('HELLO STDIN');
    const inSub = await sandbox.exec('ls -A', { cwd: 'pkg/sub' });
    expect(inSub.stdout).toBe('.keep\n');
    const inSubAbsolute = await sandbox.exec('ls -A', { cwd: '/workspace/pkg/sub' });
    expect(inSubAbsolute.stdout).toBe('.keep\n');
    await expect(sandbox.exec('pwd', { cwd: '..' })).rejects.toMatchObject({ code: 'path_refused' });
    await expect(sandbox.exec('pwd', { cwd: '/etc' })).rejects.toMatchObject({ code: 'path_refused' });
    await expect(sandbox.exec('pwd', { cwd: 'missing' })).rejects.toMatchObject({ code: 'not_found' });
    await sandbox.release();
  });

  it('caps each stream, keeps the head and counts the dropped bytes exactly', async () => {
    const sandbox = await provider.acquire('output-cap', { network: 'none' });
    // 100000 bytes of stdout, 5000 of stderr.
    const result = await sandbox.exec("head -c 100000 /dev/zero | tr '\\0' a; printf 'b%.0s' $(seq 1 5000) >&2", {
      maxOutputBytes: 1000,
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('a'.repeat(1000));
    expect(result.stderr).toBe('b'.repeat(1000));
    expect(result.truncatedBytes).toEqual({ stdout: 99_000, stderr: 4_000 });
    await sandbox.release();
  });

  it('kills the whole process tree on timeout', async () => {
    const sandbox = await provider.acquire('timeout-tree', { network: 'none' });
    const seconds = uniqueSleepSeconds();
    const result = await sandbox.exec(`sleep ${seconds} & sleep ${seconds} & echo started; sleep ${seconds}`, {
      timeoutMs: 1_000,
    });
    expect(result.timedOut).toBe(true);
    expect(result.aborted).toBe(false);
    expect(result.stdout).toBe('started\n');
    expect(await eventually(async () => (await pidsWithMarker(`sleep ${seconds}`)).length === 0)).toBe(true);
    await sandbox.release();
  });

  it('kills the whole process tree on abort and reports aborted', async () => {
    const sandbox = await provider.acquire('abort-tree', { network: 'none' });
    const seconds = uniqueSleepSeconds();
    const controller = new AbortController();
    const running = sandbox.exec(`(sleep ${seconds}; echo never) & sleep ${seconds}`, { signal: controller.signal });
    expect(await eventually(async () => (await pidsWithMarker(`sleep ${seconds}`)).length >= 2)).toBe(true);
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({ aborted: true, timedOut: false, exitCode: null });
    expect(await eventually(async () => (await pidsWithMarker(`sleep ${seconds}`)).length === 0)).toBe(true);

    const already = await sandbox.exec('echo should-not-run > ran.txt', { signal: AbortSignal.abort() });
    expect(already.aborted).toBe(true);
    await expect(sandbox.readFile('ran.txt')).rejects.toMatchObject({ code: 'not_found' });
    await sandbox.release();
  });

  it('does not leave background processes behind after a normal exit', async () => {
    const sandbox = await provider.acquire('background', { network: 'none' });
    const seconds = uniqueSleepSeconds();
    const result = await sandbox.exec(`sleep ${seconds} & echo done`);
    expect(result).toMatchObject({ exitCode: 0, stdout: 'done\n', timedOut: false });
    expect(await eventually(async () => (await pidsWithMarker(`sleep ${seconds}`)).length === 0)).toBe(true);
    await sandbox.release();
  });

  it('refuses invalid environment variable names', async () => {
    const sandbox = await provider.acquire('bad-env', { network: 'none' });
    await expect(sandbox.exec('true', { env: { 'A=B': 'x' } })).rejects.toMatchObject({ code: 'invalid_input' });
    await sandbox.release();
  });
});
