/**
 * What the disk quota costs per command, measured in one run on this machine: the quota is counted
 * from the workspace's first byte, so each command ends with a `du` of the whole workspace (the
 * next command's starting figure). Compares `true` in a sandbox whose workspace is empty with the
 * same in one holding FILES small files (a checkout with its dependencies), and prints the `du` of
 * that tree alone. As root this also includes the private mount namespace and setpriv of the
 * sandbox user. Run: npm exec -- node bench/sandbox-disk-quota.ts
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createLocalSandboxProvider, type Sandbox } from '../sandbox/index.ts';

const FILES = 20_000;
const RUNS = 20;
const WARMUP = 3;
const log = pino({ level: 'silent' });

const dataDir = await mkdtemp(path.join(tmpdir(), 'patchbay-bench-quota-'));
const provider = await createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'bwrap' });

async function timeTrue(sandbox: Sandbox): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const started = performance.now();
    const result = await sandbox.exec('true');
    if (result.exitCode !== 0) throw new Error(`true failed: ${result.stderr}`);
    if (i >= WARMUP) times.push(performance.now() - started);
  }
  return times;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;

try {
  const empty = await provider.acquire('bench-quota-empty', { network: 'none' });
  const full = await provider.acquire('bench-quota-full', { network: 'none' });
  const fullDir = provider.hostPath('bench-quota-full');
  for (let d = 0; d < FILES / 100; d++) {
    const dir = path.join(fullDir, `pkg${d}`);
    await mkdir(dir, { recursive: true });
    for (let f = 0; f < 100; f++) await writeFile(path.join(dir, `f${f}.js`), 'module.exports = 1;\n');
  }
  // The first command hands the host-written tree to the sandbox user (as root); not timed.
  await full.exec('true');
  const emptyTimes = await timeTrue(empty);
  const fullTimes = await timeTrue(full);
  const duTimes: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    execFileSync('du', ['-s', '-B1', '-x', fullDir]);
    duTimes.push(performance.now() - started);
  }
  process.stdout.write(
    [
      `sandbox user: ${provider.sandboxUser ? `uid ${provider.sandboxUser.uid} (server is root)` : "the server's own uid"}`,
      `true, empty workspace       median ${ms(median(emptyTimes))}`,
      `true, ${FILES} files workspace median ${ms(median(fullTimes))}  (${(median(fullTimes) / median(emptyTimes)).toFixed(2)}x the empty one)`,
      `du of the ${FILES} files alone   median ${ms(median(duTimes))}`,
      '',
    ].join('\n'),
  );
  await empty.destroy();
  await full.destroy();
} finally {
  await provider.close();
  await rm(dataDir, { recursive: true, force: true });
}
