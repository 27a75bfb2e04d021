import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import { pageScript } from '../../src/api/web-page-script.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

const CHROMIUM = '/usr/bin/chromium';

it('ships a client script that parses', () => {
  expect(() => new Function(pageScript)).not.toThrow();
});

// No skipping: `./bootstrap.sh --test` (which CI runs) installs Chromium, and without it these fail.
describe('web page in Chromium', () => {
  let fx: ApiFixture;
  let browser: Browser;
  let app: ApiServer;
  let base: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed: run ./bootstrap.sh --test (apt-get install chromium)`);
    fx = await createApiFixture();
    app = fx.server();
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await fx.close();
  });

  /** A page that fails the test on any script error or console error (CSP violations included). */
  async function openPage(path: string): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1100, height: 1200 } });
    page.setDefaultTimeout(8000);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    await page.goto(`${base}${path}`);
    return { page, problems };
  }

  it('shows a session live: transcript, tool calls, question, status and PR link', async () => {
    const created = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ repo: 'https://github.com/acme/widgets', prompt: 'Fix the flaky date test in utils', author: { name: 'Ada Lovelace', email: 'ada@example.com' } }),
    });
    const { id } = (await created.json()) as { id: string };
    const { page, problems } = await openPage(`/sessions/${id}`);

    await page.locator('.ev-user-message', { hasText: 'Fix the flaky date test' }).waitFor();
    await expect(page.locator('#title').textContent()).resolves.toBe('Fix the flaky date test in utils');
    await expect(page.locator('#status .badge').textContent()).resolves.toBe('queued');
    await expect(page.locator('.ev-user-message .who b').textContent()).resolves.toBe('Ada Lovelace');

    // The worker's side of a run, appended through the store while the page is open.
    await fx.store.transition(id, 'start');
    await fx.store.append(id, [
      { event: { type: 'workspace-ready', branch: 'patchbay/fix-flaky-date', baseBranch: 'main', baseCommit: '0123456789abcdef' } },
      { event: { type: 'assistant-message', text: 'I will look at the date helpers first. <img src=x onerror="window.pwned=1">', turn: 0 } },
      { event: { type: 'tool-start', callId: 'c1', name: 'shell', input: { command: 'npm test -- utils/date' } } },
      { event: { type: 'tool-end', callId: 'c1', name: 'shell', isError: true, output: 'FAIL utils/date.test.ts\n  expected 2024-03-10 to equal 2024-03-11', durationMs: 2340 } },
      { event: { type: 'question-asked', questionId: 'q1', question: 'Should I pin the timezone to UTC in the test setup?', choices: ['Pin to UTC', 'Mock the clock'], recommended: 'Pin to UTC' } },
    ]);
    const usage = { inputTokens: 12_400, outputTokens: 830, cacheReadTokens: 0, cacheWriteTokens: 0 };
    await fx.store.commitStep(id, { usage, events: [{ event: { type: 'usage', turn: 0, model: 'claude-sonnet-4-5', ...usage } }] });
    await fx.store.append(id, [
      { event: { type: 'branch-pushed', branch: 'patchbay/fix-flaky-date', commit: 'fedcba9876543210', remote: 'origin' } },
      { event: { type: 'pr-opened', url: 'https://github.com/acme/widgets/pull/42', number: 42, branch: 'patchbay/fix-flaky-date', commit: 'fedcba9876543210' } },
    ]);

    const assistant = page.locator('.ev-assistant-message');
    await assistant.waitFor();
    await expect(assistant.locator('.text').textContent()).resolves.toContain('<img src=x onerror="window.pwned=1">');
    expect(await page.locator('.transcript img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

    await page.locator('#status .badge', { hasText: 'running' }).waitFor();
    const tool = page.locator('details.tool[data-call="c1"]');
    await expect(tool.locator('.state').textContent()).resolves.toBe('failed · 2.3 s');
    await expect(tool.locator('.output').textContent()).resolves.toContain('expected 2024-03-10');
    await page.locator('.ev-question-asked button', { hasText: 'Pin to UTC' }).waitFor();
    await expect(page.locator('.ev-pr-opened a').getAttribute('href')).resolves.toBe('https://github.com/acme/widgets/pull/42');
    await page.locator('#header', { hasText: '12.4k in' }).waitFor();
    // 12,400 in at $3 and 830 out at $15 per million tokens.
    await page.locator('#header', { hasText: '830 out \u00b7 \u2248 $0.05' }).waitFor();
    await page.locator('#header', { hasText: 'patchbay/fix-flaky-date' }).waitFor();

    // A follow-up from the composer lands in the log with its author, and comes back on the stream.
    await page.fill('#name', 'Grace');
    await page.fill('#message', 'Pin it to UTC please');
    await page.click('#send');
    await page.locator('.ev-user-message', { hasText: 'Pin it to UTC please' }).waitFor();
    const last = (await fx.store.events(id)).at(-1)?.event;
    expect(last).toMatchObject({ type: 'user-message', text: 'Pin it to UTC please', actor: { name: 'Grace' } });

    await tool.locator('summary').click();
    await page.screenshot({ path: '/tmp/patchbay-page.png', fullPage: true });

    await page.click('#stop');
    await page.locator('#status .badge', { hasText: 'cancelled' }).waitFor();
    expect((await fx.store.get(id))?.status).toBe('cancelled');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('lists sessions and starts a new one from the form', async () => {
    const { page, problems } = await openPage('/');
    await page.locator('#sessions li a', { hasText: 'Fix the flaky date test in utils' }).waitFor();
    await page.screenshot({ path: '/tmp/patchbay-list.png' });
    await page.fill('#repo', 'https://github.com/acme/gadgets');
    await page.fill('#prompt', 'Add a CHANGELOG entry');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/sessions\/[^/]+$/);
    await page.locator('.ev-user-message', { hasText: 'Add a CHANGELOG entry' }).waitFor();
    const sessions = await fx.store.list();
    expect(sessions[0]).toMatchObject({ repo: 'https://github.com/acme/gadgets', title: 'Add a CHANGELOG entry' });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('asks for the API token once and then works with it', async () => {
    const secured = fx.server({ apiToken: 'browser-secret' });
    const url = await secured.listen({ host: '127.0.0.1', port: 0 });
    const page = await browser.newPage();
    await page.goto(`${url}/`);
    await page.locator('#token-form').waitFor();
    await page.fill('#token', 'browser-secret');
    await page.click('#token-form button');
    await page.locator('#sessions li').first().waitFor();
    expect(await page.locator('#token-form').count()).toBe(0);
    expect(await page.evaluate(() => localStorage.getItem('patchbay.token'))).toBe('browser-secret');
    await page.close();
  });
});
