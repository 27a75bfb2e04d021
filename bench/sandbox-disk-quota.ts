/**
 * What the disk quota costs, measured in one run on this machine, for both ways it holds:
 * 'filesystem' (as root: each workspace a sparse ext4 image, loop-mounted; the kernel refuses the
 * byte past the quota and a command ends with one statfs) and 'watch' (each command ends with a
 * `du` of the whole workspace, the next command's starting figure). Prints, per way: the time to
 * create a workspace (acquire of a new session, its image made and mounted), `true` in an empty
 * workspace and in one holding FILES small files (a checkout with its dependencies), and writing
 * FILES small files in one command; ratios are filesystem over watch. As root both include the
 * private mount namespace and setpriv of the sandbox user.
 * Run: npm exec -- node bench/sandbox-disk-quota.ts
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createLocalSandboxProvider, type Sandbox } from '../sandbox/index.ts';

const FILES = 20_000;
const RUNS = 20;
const WARMUP = 3;
const CREATES = 10;
const log = pino({ level: 'silent' });

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

type Figures = { create: number; empty: number; full: number; write: number };

async function measure(diskQuota: 'filesystem' | 'watch'): Promise<Figures> {
  const dataDir = await mkdtemp(path.join(tmpdir(), `patchbay-bench-quota-${diskQuota}-`));
  const provider = await createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'bwrap', diskQuota });
  try {
    const creates: number[] = [];
    for (let i = 0; i < CREATES; i++) {
      const started = performance.now();
      const sandbox = await provider.acquire(`bench-quota-new-${i}`, { network: 'none' });
      creates.push(performance.now() - started);
      await sandbox.destroy();
    }
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
    const writes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const result = await empty.exec(`python3 -c "import os
os.makedirs('w${i}')
for f in range(${FILES}): open('w${i}/f%d' % f, 'wb').write(b'x' * 100)" && rm -rf w${i}`);
      if (result.exitCode !== 0) throw new Error(`write failed: ${result.stderr}`);
      writes.push(performance.now() - started);
    }
    await empty.destroy();
    await full.destroy();
    return { create: median(creates), empty: median(emptyTimes), full: median(fullTimes), write: median(writes) };
  } finally {
    await provider.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const watch = await measure('watch');
const filesystem = process.getuid?.() === 0 ? await measure('filesystem') : undefined;
const versus = (key: keyof Figures) =>
  filesystem ? `   filesystem ${ms(filesystem[key])}  (${(filesystem[key] / watch[key]).toFixed(2)}x)` : '';
const row = (label: string, key: keyof Figures) => `${label.padEnd(34)} watch ${ms(watch[key])}${versus(key)}`;
process.stdout.write(
  [
    filesystem
      ? 'disk quota: watch vs a file system per workspace (server is root)'
      : 'disk quota: watch only (a file system per workspace needs root)',
    row('create a workspace', 'create'),
    row('true, empty workspace', 'empty'),
    row(`true, ${FILES} files workspace`, 'full'),
    row(`write ${FILES} small files + rm`, 'write'),
    '',
  ].join('\n'),
);
