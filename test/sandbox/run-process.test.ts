import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../sandbox/run-process.ts';

const env = { PATH: '/usr/local/bin:/usr/bin:/bin' };
const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** The host process runner host git and the sandbox share. */
describe('runProcess', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'patchbay-run-process-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the head of stdout and, when asked, the tail of stderr, counting what it dropped', async () => {
    const result = await runProcess({
      file: '/bin/sh',
      args: ['-c', 'seq 1 1000; seq 1 1000 >&2'],
      cwd: dir,
      env,
      maxOutputBytes: 20,
      stderrKeeps: 'tail',
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('1\n2\n3\n4\n5\n6\n7\n8\n9\n10');
    expect(result.stderr).toBe('96\n997\n998\n999\n1000\n');
    const total = Array.from({ length: 1000 }, (_, i) => `${i + 1}\n`).join('').length;
    expect(result.truncatedBytes).toEqual({ stdout: total - 20, stderr: total - 20 });
  });

  it('kills the whole process group on abort, what the command started in the background too', async () => {
    const marker = join(dir, 'abort-marker');
    const controller = new AbortController();
    const running = runProcess({
      file: '/bin/sh',
      args: ['-c', `(sleep 1 && touch ${marker}) & sleep 30`],
      cwd: dir,
      env,
      maxOutputBytes: 1024,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 200);
    const result = await running;
    expect(result.aborted).toBe(true);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await exists(marker)).toBe(false);
  });

  it("ends what the main process left behind when it exits, unless told to leave it (git's background maintenance)", async () => {
    const killed = join(dir, 'killed-marker');
    const kept = join(dir, 'kept-marker');
    const background = (marker: string) => ['-c', `(sleep 1 && touch ${marker}) </dev/null >/dev/null 2>&1 & exit 0`];
    expect(
      (await runProcess({ file: '/bin/sh', args: background(killed), cwd: dir, env, maxOutputBytes: 1024 })).exitCode,
    ).toBe(0);
    expect(
      (
        await runProcess({
          file: '/bin/sh',
          args: background(kept),
          cwd: dir,
          env,
          maxOutputBytes: 1024,
          killGroupOnExit: false,
        })
      ).exitCode,
    ).toBe(0);
    await new Promise((r) => setTimeout(r, 1800));
    expect(await exists(killed)).toBe(false);
    expect(await exists(kept)).toBe(true);
  });

  it('times out only when given a limit', async () => {
    const limited = await runProcess({
      file: '/bin/sh',
      args: ['-c', 'sleep 5'],
      cwd: dir,
      env,
      maxOutputBytes: 1024,
      timeoutMs: 200,
    });
    expect(limited.timedOut).toBe(true);
    const unlimited = await runProcess({
      file: '/bin/sh',
      args: ['-c', 'sleep 0.3; echo done'],
      env,
      maxOutputBytes: 1024,
    });
    expect(unlimited).toMatchObject({ timedOut: false, exitCode: 0, stdout: 'done\n' });
  });
});
