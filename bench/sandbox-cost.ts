/**
 * What isolation costs, measured in one run on this machine:
 *  1. starting a sandbox and running `true`: no isolation (unsafe-local) vs bubblewrap with
 *     network 'none' vs bubblewrap with network 'proxy' (its own namespace plus the egress relay);
 *  2. a 1 MB download from a loopback HTTP server, timed by curl itself (so sandbox start-up is not
 *     counted): directly on the host vs inside a 'proxy' sandbox through the relay and the host's
 *     egress proxy (allowlisted by exact address and port).
 * Traffic goes to loopback only. Run: npm exec -- node bench/sandbox-cost.ts
 */
import { createServer } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { parseEgressAllow } from '../sandbox/egress-policy.ts';
import { createLocalSandboxProvider, type Sandbox } from '../sandbox/index.ts';
import { listenOnLoopback } from '../test/fakes/loopback.ts';

const STARTS = 30;
const DOWNLOADS = 30;
const WARMUP = 3;
const log = pino({ level: 'silent' });

const body = Buffer.alloc(1024 * 1024, 'x');
const server = await listenOnLoopback(
  createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    res.end(body);
  }),
);
const dataDir = await mkdtemp(path.join(tmpdir(), 'patchbay-bench-sandbox-'));
const egress = { policy: { rules: parseEgressAllow(`127.0.0.1:${server.port}`), protectedEndpoints: [] } };
const isolated = await createLocalSandboxProvider({
  dataDir: path.join(dataDir, 'bwrap'),
  log,
  ttlMinutes: 60,
  mode: 'bwrap',
  egress,
});
const bare = await createLocalSandboxProvider({
  dataDir: path.join(dataDir, 'bare'),
  log,
  ttlMinutes: 60,
  mode: 'unsafe-local',
});

const sandboxes = {
  none: await bare.acquire('bench-bare', { network: 'none' }),
  bwrap: await isolated.acquire('bench-none', { network: 'none' }),
  proxy: await isolated.acquire('bench-proxy', { network: 'proxy' }),
};

async function startCost(sandbox: Sandbox): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < WARMUP + STARTS; i++) {
    const started = performance.now();
    const result = await sandbox.exec('true');
    if (result.exitCode !== 0) throw new Error(`true failed: ${result.stderr}`);
    if (i >= WARMUP) times.push(performance.now() - started);
  }
  return times;
}

/** curl's own time for the whole transfer, in ms; `viaProxy` uses the sandbox's HTTP_PROXY. */
async function downloadCost(sandbox: Sandbox, viaProxy: boolean): Promise<number[]> {
  const noProxy = viaProxy ? '' : "--noproxy '*' ";
  const command = `for i in $(seq ${WARMUP + DOWNLOADS}); do curl -sS ${noProxy}-o /dev/null -w '%{size_download} %{time_total}\\n' http://127.0.0.1:${server.port}/1mb || exit 1; done`;
  const result = await sandbox.exec(command, { timeoutMs: 10 * 60_000 });
  if (result.exitCode !== 0) throw new Error(`download failed: ${result.stderr}`);
  const lines = result.stdout.trim().split('\n').slice(WARMUP);
  return lines.map((line) => {
    const [size, seconds] = line.split(' ');
    if (Number(size) !== body.length) throw new Error(`downloaded ${size} bytes, not ${body.length}`);
    return Number(seconds) * 1000;
  });
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;

try {
  const start = {
    none: await startCost(sandboxes.none),
    bwrap: await startCost(sandboxes.bwrap),
    proxy: await startCost(sandboxes.proxy),
  };
  const download = {
    direct: await downloadCost(sandboxes.none, false),
    proxy: await downloadCost(sandboxes.proxy, true),
  };
  const base = quantile(start.none, 0.5);
  console.log(`start a sandbox and run \`true\` (${STARTS} runs each)          p50         p90    p50 vs none`);
  console.log(
    `  no isolation (unsafe-local)                        ${ms(base)}  ${ms(quantile(start.none, 0.9))}   1.00x`,
  );
  console.log(
    `  bubblewrap, network none                           ${ms(quantile(start.bwrap, 0.5))}  ${ms(quantile(start.bwrap, 0.9))}   ${(quantile(start.bwrap, 0.5) / base).toFixed(2)}x`,
  );
  console.log(
    `  bubblewrap, network proxy (relay + host proxy)     ${ms(quantile(start.proxy, 0.5))}  ${ms(quantile(start.proxy, 0.9))}   ${(quantile(start.proxy, 0.5) / base).toFixed(2)}x`,
  );
  const direct = quantile(download.direct, 0.5);
  const proxied = quantile(download.proxy, 0.5);
  console.log(`1 MB download from loopback, curl time (${DOWNLOADS} runs each)      p50         p90`);
  console.log(
    `  direct, no isolation                               ${ms(direct)}  ${ms(quantile(download.direct, 0.9))}`,
  );
  console.log(
    `  through the sandbox's relay and the egress proxy   ${ms(proxied)}  ${ms(quantile(download.proxy, 0.9))}`,
  );
  console.log(`  added by the proxy: ${(proxied - direct).toFixed(1)} ms at p50 (${(proxied / direct).toFixed(2)}x)`);
} finally {
  for (const sandbox of Object.values(sandboxes)) await sandbox.release();
  await isolated.close();
  await bare.close();
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
}
