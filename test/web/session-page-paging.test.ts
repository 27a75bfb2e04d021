import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NewEvent } from '../../src/core/run-log.ts';
import { openPage, screenshotDir } from './chromium.ts';
import { usePageFixture } from './page-fixture.ts';

const TURNS = 600;

/**
 * A long session's page in Chromium: it shows the newest events first from one small page of the
 * log (no read of the whole log, the stream starting at the newest seq), and older pages come in
 * as the reader scrolls up, above what they were reading, which stays where it was on screen.
 */
describe('a long session, in Chromium', () => {
  const web = usePageFixture();

  it('shows the newest events first and the older ones as the reader scrolls up', { timeout: 120_000 }, async () => {
    const actor = { source: 'web' as const, id: 'ada', name: 'Ada' };
    const started = await web.fx.service.start({
      thread: { source: 'web' },
      actor,
      text: 'A long task',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    await web.fx.store.transition(id, 'start');
    for (let start = 0; start < TURNS; start += 100) {
      const batch: NewEvent[] = [];
      for (let turn = start; turn < start + 100; turn++) {
        batch.push(
          { event: { type: 'assistant-message', turn, text: `Turn ${turn} of the long task.` } },
          {
            event: {
              type: 'tool-start',
              callId: `c${turn}`,
              name: 'run_shell',
              input: { command: `npm test -- ${turn}` },
            },
          },
          {
            event: {
              type: 'tool-end',
              callId: `c${turn}`,
              name: 'run_shell',
              isError: false,
              output: 'PASS\n'.repeat(50),
              durationMs: 12,
            },
          },
        );
      }
      await web.fx.store.append(id, batch);
    }
    const lastSeq = (await web.fx.store.get(id))!.lastSeq;

    const context = web.browser.context;
    const requests: string[] = [];
    context.on('request', (request) => {
      if (request.url().includes('/events')) requests.push(new URL(request.url()).search);
    });
    const { page, problems } = await openPage(context, `${web.base}/sessions/${id}`);
    const turnsShown = () => page.locator('.item-assistant .text').allTextContents();

    await page.locator('.item-assistant', { hasText: `Turn ${TURNS - 1} of` }).waitFor();
    await page.locator('body[data-caught-up="true"]').waitFor();
    const first = await turnsShown();
    expect(first.length).toBeGreaterThan(10);
    expect(first.length).toBeLessThan(100);
    expect(first).not.toContain('Turn 0 of the long task.');
    // The newest page read, the facts by type, and the stream from the newest seq: never the whole log.
    expect(requests).toContain('?limit=100');
    expect(requests.some((q) => q.startsWith('?limit=1000&types='))).toBe(true);
    expect(requests).toContain(`?after=${lastSeq}`);
    expect(requests.filter((q) => !q.includes('limit=') && !q.startsWith('?after='))).toEqual([]);
    // At the bottom, following the run.
    expect(await page.evaluate(() => innerHeight + scrollY >= document.documentElement.scrollHeight - 80)).toBe(true);

    // Scroll up, page by page: each older page goes in above, and what was at the top stays in view.
    for (let pages = 0; !(await turnsShown()).includes('Turn 0 of the long task.'); pages++) {
      expect(pages, 'pages read before the first turn showed').toBeLessThan(12);
      const before = (await turnsShown()).length;
      const oldest = page.locator('.item-assistant').first();
      const oldestText = await oldest.locator('.text').textContent();
      await page.evaluate(() => scrollTo({ top: 0 }));
      await page.waitForFunction((n) => document.querySelectorAll('.item-assistant').length > n, before);
      await page.locator('.earlier[disabled]').waitFor({ state: 'detached' });
      const kept = page.locator('.item-assistant', { hasText: oldestText! });
      const box = await kept.boundingBox();
      // Where it was (near the top, give or take the real heights of items that were only
      // estimated before they were drawn), not pushed down by the page that went in above it.
      expect(box!.y, `"${oldestText}" after page ${pages + 1}`).toBeGreaterThan(-150);
      expect(box!.y, `"${oldestText}" after page ${pages + 1}`).toBeLessThan(450);
      expect(await page.evaluate(() => scrollY)).toBeGreaterThan(1000);
    }
    // Every turn once, in order, and no "earlier" button left.
    expect(await turnsShown()).toEqual(Array.from({ length: TURNS }, (_, turn) => `Turn ${turn} of the long task.`));
    expect(await page.locator('.earlier').count()).toBe(0);
    expect(requests.filter((q) => q.includes('before=') && !q.includes('types='))).not.toHaveLength(0);
    // Tool calls that started on an older page kept their start and their result.
    await expect(page.locator('.item-tool').first().locator('.gist').textContent()).resolves.toContain('npm test -- 0');

    // Still live: a new message arrives at the end.
    await web.fx.store.append(id, [{ event: { type: 'user-message', actor, text: 'Are we there yet?' } }]);
    await page.locator('.item-user', { hasText: 'Are we there yet?' }).waitFor();
    expect(await page.locator('.item').last().textContent()).toContain('Are we there yet?');
    await page.screenshot({ path: join(screenshotDir, 'session-page-paging.png') });
    expect(problems).toEqual([]);
  });
});
