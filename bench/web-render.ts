/**
 * The session page with a long session, in Chromium: time to first render (the first events on
 * screen), time to interactive (the page caught up with the log and answering a click), and the
 * page's JS heap after it. Sessions of 5,000 events (10 MB of tool output) and 50,000 events
 * (100 MB) against a 50-event baseline measured in the same run. Goal: interactive under 500 ms at
 * 5,000 events and under 1 s at 50,000.
 *
 *   node bench/web-render.ts
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { chromium, type BrowserContext } from 'playwright-core';
import { loadConfig } from '../src/config.ts';
import { startPatchbay } from '../src/main.ts';
import type { NewEvent } from '../src/core/run-log.ts';
import type { SessionStore } from '../src/sessions/store/session-store.ts';

const CHROMIUM = '/usr/bin/chromium';
const RUNS = 3;
const actor = { source: 'web' as const, id: 'bench', name: 'Bench User' };

/** A session of `rounds` model turns, each: text, a tool call and its output, usage (4 events). */
async function seedSession(
  store: SessionStore,
  rounds: number,
  outputBytes: number,
): Promise<{ id: string; events: number; bytes: number }> {
  const id = randomUUID();
  await store.create({
    id,
    repo: 'https://github.com/acme/big',
    prompt: 'A long task',
    title: 'A long task',
    requester: actor,
    thread: { source: 'web' },
  });
  await store.transition(id, 'start');
  const line = 'PASS src/module.test.ts > does the thing it should do (12 ms)\n';
  const output = line.repeat(Math.ceil(outputBytes / line.length)).slice(0, outputBytes);
  let bytes = 0;
  for (let start = 0; start < rounds; start += 100) {
    const batch: NewEvent[] = [];
    for (let turn = start; turn < Math.min(rounds, start + 100); turn++) {
      batch.push(
        {
          event: {
            type: 'assistant-message',
            turn,
            text: `Turn ${turn}: running the tests again after changing the parser to handle the edge case.`,
          },
        },
        {
          event: {
            type: 'tool-start',
            callId: `c${turn}`,
            name: 'run_shell',
            input: { command: `npm test -- --run ${turn}` },
          },
        },
        {
          event: {
            type: 'tool-end',
            callId: `c${turn}`,
            name: 'run_shell',
            isError: turn % 7 === 0,
            output,
            durationMs: 1234,
          },
        },
        {
          event: {
            type: 'usage',
            turn,
            model: 'claude-sonnet-4-6',
            inputTokens: 1000,
            outputTokens: 100,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
          },
        },
      );
      bytes += output.length;
    }
    await store.append(id, batch);
  }
  const session = await store.get(id);
  return { id, events: session!.lastSeq, bytes };
}

type Figures = { firstRenderMs: number; firstPaintMs: number; interactiveMs: number; clickMs: number; heapMb: number };

async function measure(context: BrowserContext, url: string): Promise<Figures> {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  const begin = Date.now();
  await page.goto(url);
  await page.locator('body[data-caught-up="true"]').waitFor({ timeout: 300_000 });
  // Interactive: the page answers a click (switch to the Checks tab and back) once the log is in.
  const clickMs = await page.evaluate(async () => {
    const start = performance.now();
    document.getElementById('tab-checks')!.click();
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    document.getElementById('tab-timeline')!.click();
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    return performance.now() - start;
  });
  const interactiveMs = Date.now() - begin;
  const marks = await page.evaluate(() => ({
    first: performance.getEntriesByName('patchbay:first-render')[0]?.startTime ?? Number.NaN,
    paint: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
  }));
  await cdp.send('HeapProfiler.collectGarbage');
  const heap = (await cdp.send('Runtime.getHeapUsage')) as { usedSize: number };
  await page.close();
  return {
    firstRenderMs: marks.first,
    firstPaintMs: marks.paint,
    interactiveMs,
    clickMs,
    heapMb: heap.usedSize / 1024 / 1024,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const work = await mkdtemp(join(tmpdir(), 'bench-web-'));
const app = await startPatchbay(loadConfig({ DATA_DIR: join(work, 'data'), PORT: '0', LOG_LEVEL: 'silent' }), {
  log: pino({ level: 'silent' }),
  serve: true,
});
const profile = await mkdtemp(join(tmpdir(), 'bench-web-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
  viewport: { width: 1280, height: 900 },
});
try {
  const small = await seedSession(app.store, 12, 800);
  const big = await seedSession(app.store, 1250, 8 * 1024);
  const huge = await seedSession(app.store, 12_500, 8 * 1024);
  const results: Record<string, Figures> = {};
  for (const [name, session] of [
    ['baseline', small],
    ['long', big],
    ['huge', huge],
  ] as const) {
    const runs: Figures[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await measure(context, `${app.url}/sessions/${session.id}`));
    results[name] = {
      firstRenderMs: median(runs.map((r) => r.firstRenderMs)),
      firstPaintMs: median(runs.map((r) => r.firstPaintMs)),
      interactiveMs: median(runs.map((r) => r.interactiveMs)),
      clickMs: median(runs.map((r) => r.clickMs)),
      heapMb: median(runs.map((r) => r.heapMb)),
    };
  }
  const base = results.baseline!;
  const long = results.long!;
  const longest = results.huge!;
  const cell = (value: number, unit: string, digits: number) => `${value.toFixed(digits).padStart(8)} ${unit}`;
  const row = (label: string, key: keyof Figures, unit: string, digits = 0) =>
    console.log(
      `${label.padEnd(36)} ${cell(base[key], unit, digits)}   ${cell(long[key], unit, digits)} ${`(${(long[key] / base[key]).toFixed(1)}x)`.padStart(8)}   ${cell(longest[key], unit, digits)} ${`(${(longest[key] / base[key]).toFixed(1)}x)`.padStart(8)}`,
    );
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
  console.log(
    `sessions: baseline ${small.events} events, ${(small.bytes / 1024).toFixed(0)} KB of tool output; long ${big.events} events, ${mb(big.bytes)}; longest ${huge.events} events, ${mb(huge.bytes)} (median of ${RUNS} loads each)`,
  );
  console.log(
    `${''.padEnd(36)} ${'baseline'.padStart(11)}   ${'long'.padStart(11)} ${'vs base'.padStart(8)}   ${'longest'.padStart(11)} ${'vs base'.padStart(8)}`,
  );
  row('first render (first events shown)', 'firstRenderMs', 'ms');
  row('first contentful paint', 'firstPaintMs', 'ms');
  row('interactive (caught up, click served)', 'interactiveMs', 'ms');
  row('click to next frame, after load', 'clickMs', 'ms', 1);
  row('JS heap after load (after GC)', 'heapMb', 'MB', 1);
  const goal = (label: string, figure: number, limit: number) =>
    console.log(
      `goal: interactive under ${limit} ms at ${label}: ${figure < limit ? 'PASS' : 'MISS'} (${figure.toFixed(0)} ms)`,
    );
  goal(`${big.events} events`, long.interactiveMs, 500);
  goal(`${huge.events} events`, longest.interactiveMs, 1000);
} finally {
  await context.close();
  await app.close();
  await rm(profile, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
}
