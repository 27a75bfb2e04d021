import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openPage, screenshotDir } from './chromium.ts';
import { usePageFixture } from './page-fixture.ts';

/** A git error as a failed clone reports it: one long path with no place to break a line (no spaces, no hyphens). */
const longPath = `/srv/patchbay/data/mirrors/${'very_long_directory_name_'.repeat(12)}repository.git`;
const failure = `git clone failed: fatal: repository '${longPath}' does not exist`;

/**
 * A failed session's page in Chromium: its log holds an `error` event, which must read as a
 * message on a live stream (sent as SSE `event: error`, it fired EventSource.onerror and the page
 * said "reconnecting…" forever), a long error path that stays inside the page, and the sticky
 * session header sitting right under the sticky top bar with no gap for the timeline to show through.
 */
describe('a failed session with a long error, in Chromium', () => {
  const web = usePageFixture();

  it('stays live after the error event, keeps the error inside the page, and leaves no gap under the top bar', {
    timeout: 90_000,
  }, async () => {
    const started = await web.fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Fix the parser',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    await web.fx.store.transition(id, 'start');
    // Enough of a timeline to scroll.
    await web.fx.store.append(
      id,
      Array.from({ length: 40 }, (_, turn) => ({
        event: { type: 'assistant-message' as const, text: `Step ${turn}: reading the parser.`, turn },
      })),
    );
    await web.fx.store.transition(id, 'fail', {
      reason: failure,
      patch: { error: failure },
      events: [{ event: { type: 'error', code: 'git_failed', message: failure } }],
    });

    const { page, problems } = await openPage(web.browser.context, `${web.base}/sessions/${id}`);
    await page.locator('#status .badge[data-status="failed"]').waitFor();
    await page.locator('.note.tone-bad', { hasText: 'git clone failed' }).waitFor();
    await page.locator('.conn', { hasText: 'live' }).waitFor();
    // Said once: the timeline's note, not again in the side panel.
    await page.locator('#side').waitFor();
    expect(await page.evaluate(() => (document.body.textContent ?? '').split('does not exist').length - 1)).toBe(1);
    // Still live once everything arrived (the browser would have fired onerror on the error frame).
    await page.waitForTimeout(500);
    expect(await page.locator('.conn').textContent()).toBe('live');

    // A later event on the same stream still arrives: the stream was never taken for broken.
    await web.fx.store.append(id, [
      { event: { type: 'user-message', actor: { source: 'web', id: 'ada', name: 'Ada' }, text: 'Why did it fail?' } },
    ]);
    await page.locator('.item-user', { hasText: 'Why did it fail?' }).waitFor();

    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 800 });
      const overflow = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        wider: [...document.querySelectorAll('.error, .note')]
          .filter((e) => e.scrollWidth > e.clientWidth + 1)
          .map((e) => e.className),
      }));
      expect(overflow, `at ${width}px`).toEqual({ page: 0, wider: [] });

      await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
      await page.waitForTimeout(100);
      const edges = await page.evaluate(() => ({
        topBar: document.querySelector('.top')!.getBoundingClientRect().bottom,
        head: document.querySelector('.session-head')!.getBoundingClientRect().top,
      }));
      // The session header sits on the top bar: neither a strip of timeline between them nor an overlap.
      expect(
        Math.abs(edges.head - edges.topBar),
        `at ${width}px: top bar ends at ${edges.topBar}, session header starts at ${edges.head}`,
      ).toBeLessThan(1);
      await page.screenshot({ path: join(screenshotDir, `session-failed-${width}.png`) });
      await page.evaluate(() => window.scrollTo(0, 0));
    }
    expect(problems).toEqual([]);
    await page.close();
  });
});
