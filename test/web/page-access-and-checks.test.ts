import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import type { EventOf } from '../../src/core/events.ts';
import { createApiFixture, type ApiFixture } from '../api/api-fixture.ts';
import { launchChromium, openPage, screenshotDir, type Browser } from './chromium.ts';

const token = 'browser-test-token-0123456789';
const sha1 = 'a'.repeat(40);
const sha2 = 'b'.repeat(40);

function check(commit: string, outcome: EventOf<'check-finished'>['outcome'], tail: string): EventOf<'check-finished'> {
  return {
    type: 'check-finished',
    commit,
    phase: 'check',
    name: 'test',
    command: 'npm test',
    outcome,
    exitCode: outcome === 'passed' ? 0 : 1,
    durationMs: 4200,
    logHead: '> npm test',
    logTail: tail,
  };
}

/**
 * The page behind PATCHBAY_API_TOKEN, and how it renders each of the harness's gate events. The
 * server is the real API on a real database; the gate events (checks, verdicts, the review gate on a
 * PR, a blocked connection) are appended to the log as the worker appends them, so every shape is
 * shown, a ready PR included. page-harness-run.test.ts watches the same events come from a real run.
 */
describe('the page behind an API token, with checks per commit, in Chromium', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    fx = await createApiFixture();
    app = fx.server({ apiToken: token });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  it('asks for the token once, keeps it only in an HttpOnly cookie, and shows nothing without it', {
    timeout: 90_000,
  }, async () => {
    const { page, problems } = await openPage(browser.context, `${base}/`);
    await page.locator('#token-form').waitFor();
    expect(await page.locator('#filter-status').count()).toBe(0);
    await page.fill('#token', 'not-the-token-at-all');
    await page.click('#token-form button');
    await page.locator('#token-form .error', { hasText: 'not the API token' }).waitFor();
    await page.fill('#token', token);
    await page.click('#token-form button');
    await page.locator('#filter-status').waitFor();
    // Scripts cannot read it; nothing was written where scripts could.
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }))).not.toContain(token);
    const cookies = await browser.context.cookies(base);
    expect(cookies).toEqual([
      expect.objectContaining({ name: 'patchbay_session', httpOnly: true, sameSite: 'Strict', expires: -1 }),
    ]);
    // Once: a new page in the same browser session goes straight in.
    const second = await openPage(browser.context, `${base}/`);
    await second.page.locator('#filter-status').waitFor();
    expect(await second.page.locator('#token-form').count()).toBe(0);
    expect([...problems, ...second.problems].filter((p) => !p.includes('401'))).toEqual([]);
    await second.page.close();
    await page.close();
  });

  it('shows a failing then a passing check per commit with logs, the verdict, the ready PR and a blocked connection', {
    timeout: 90_000,
  }, async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Fix the parser',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    await fx.store.transition(id, 'start');
    // Signed in as the page does it (on its own, whether or not the test above ran).
    expect((await browser.context.request.post(`${base}/api/auth`, { data: { token } })).status()).toBe(204);
    const { page, problems } = await openPage(browser.context, `${base}/sessions/${id}`);
    await page.locator('#status .badge[data-status="running"]').waitFor();
    await page.keyboard.press('3');
    await page.locator('#checks', { hasText: 'No checks have run yet' }).waitFor();

    await fx.store.append(id, [
      { event: check(sha1, 'failed', 'FAIL parser.test.ts\n  expected 3 to be 4') },
      { event: { type: 'egress-blocked', host: 'registry.example.com', port: 443, reason: 'not-allowed' } },
    ]);
    const first = page.locator(`.check-group[data-commit="${sha1}"]`);
    await first.locator('.check[data-outcome="failed"]').waitFor();
    await first.locator('.check summary').click();
    await expect(first.locator('.output').textContent()).resolves.toContain('expected 3 to be 4');

    const scores = {
      relevance: { score: 2, reason: 'on task' },
      completeness: { score: 2, reason: 'all of it' },
      correctness: { score: 2, reason: 'tests pass' },
      scope: { score: 1, reason: 'one extra rename' },
    } as const;
    await fx.store.append(id, [
      { event: check(sha2, 'passed', 'Tests 12 passed') },
      {
        event: {
          type: 'verification-finished',
          commit: sha2,
          attempt: 1,
          outcome: 'passed',
          total: 7,
          scores,
          summary: 'Fixes the parser as asked.',
        },
      },
      {
        event: {
          type: 'branch-pushed',
          branch: 'patchbay/fix-parser',
          commit: sha2,
          remote: 'https://github.com/acme/widgets',
        },
      },
      {
        event: {
          type: 'pr-opened',
          url: 'https://github.com/acme/widgets/pull/7',
          number: 7,
          branch: 'patchbay/fix-parser',
          commit: sha2,
        },
      },
      { event: { type: 'review-gate', commit: sha2, ready: true, reasons: [] } },
    ]);
    const second = page.locator(`.check-group[data-commit="${sha2}"]`);
    await second.locator('.check[data-outcome="passed"]').waitFor();
    await second.locator('.verdict[data-outcome="passed"]', { hasText: '7/8' }).waitFor();
    await expect(second.locator('.scores').textContent()).resolves.toContain('one extra rename');
    await page.locator('#pr-state', { hasText: 'ready for review' }).waitFor();
    // Newest commit first.
    expect(
      await page.locator('.check-group').evaluateAll((groups) => groups.map((g) => g.getAttribute('data-commit'))),
    ).toEqual([sha2, sha1]);
    await page.screenshot({ path: join(screenshotDir, 'session-checks.png'), fullPage: true });

    await page.keyboard.press('1');
    await page.locator('.egress[data-host="registry.example.com"]', { hasText: 'registry.example.com:443' }).waitFor();
    await page.locator('.note.tone-bad', { hasText: 'Check test failed' }).waitFor();
    await page.locator('.note.tone-good', { hasText: 'Check test passed' }).waitFor();

    // The list shows where the latest commit's checks stand, and the PR.
    await page.goto(`${base}/`);
    const row = page.locator(`#sessions li[data-id="${id}"]`);
    await row.locator('.checks-passed').waitFor();
    expect(await row.locator('a[href="https://github.com/acme/widgets/pull/7"]').count()).toBe(1);

    // Readable on a phone: one column, nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/sessions/${id}`);
    await page.locator('.item-user').first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: join(screenshotDir, 'session-phone.png'), fullPage: false });
    expect(problems).toEqual([]);
    await page.close();
  });
});
