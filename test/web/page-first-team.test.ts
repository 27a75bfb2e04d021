import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { NO_PULL_REQUEST } from '../../src/core/evidence.ts';
import { openPage, screenshotDir } from './chromium.ts';
import { usePageFixture } from './page-fixture.ts';

const ada: Actor = { source: 'web', id: 'ada', name: 'Ada' };
const repo = 'https://github.com/acme/widgets';
const commit = 'a'.repeat(40);

/**
 * What a first team met on the page, in Chromium: an unknown session's link, a long tool step,
 * the Checks tab of a commit that passed everything with no pull request to mark ready, and
 * Insights for a period with sessions but no pull requests, on a desk and on a phone.
 */
describe('the page where a first team found it wanting, in Chromium', () => {
  const web = usePageFixture();

  async function startSession(text: string): Promise<string> {
    const started = await web.fx.service.start({ thread: { source: 'web' }, actor: ada, text, repo });
    if (started.kind !== 'started') throw new Error(started.kind);
    await web.fx.store.transition(started.session.id, 'start');
    return started.session.id;
  }

  it('says an unknown session is not there, with the way back and nothing to type into', async () => {
    const { page, problems } = await openPage(web.browser.context, `${web.base}/sessions/no-such-session`);
    await page.locator('#missing').waitFor();
    expect(await page.locator('#missing h1').textContent()).toBe('No such session');
    expect(await page.locator('#missing a[href="/"]').count()).toBe(1);
    expect(await page.locator('#message, #send').count()).toBe(0);
    expect(await page.locator('.conn').count()).toBe(0);
    // The 404s the page read are not the page's own errors.
    expect(problems.filter((p) => !p.includes('404'))).toEqual([]);
    await page.close();
  });

  it('counts the time of a step still running', async () => {
    const id = await startSession('Run the long suite');
    await web.fx.store.append(id, [
      { event: { type: 'tool-start', callId: 'call-1', name: 'run_shell', input: { command: 'npm test' } } },
    ]);
    const { page, problems } = await openPage(web.browser.context, `${web.base}/sessions/${id}`);
    const state = page.locator('.tool[data-call="call-1"] .state');
    await state.waitFor();
    expect(await state.textContent()).toMatch(/^running · [01] s$/);
    await page.locator('.tool[data-call="call-1"] .state', { hasText: /^running · [2-9] s$/ }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows a commit that passed every gate as passed, though no pull request was there to mark ready', async () => {
    const id = await startSession('Fix the parser');
    await web.fx.store.append(id, [
      {
        event: {
          type: 'check-finished',
          commit,
          phase: 'check',
          name: 'test',
          command: 'npm test',
          outcome: 'passed',
          exitCode: 0,
          durationMs: 1200,
          logHead: 'ok',
          logTail: 'ok',
        },
      },
      {
        event: {
          type: 'verification-finished',
          commit,
          attempt: 1,
          outcome: 'passed',
          total: 8,
          summary: 'Does what was asked.',
        },
      },
      { event: { type: 'review-gate', commit, ready: false, reasons: [NO_PULL_REQUEST] } },
    ]);
    const { page, problems } = await openPage(web.browser.context, `${web.base}/sessions/${id}`);
    await page.click('#tab-checks');
    const group = page.locator(`.check-group[data-commit="${commit}"]`);
    await group.waitFor();
    expect(await group.locator('.badge.gate').textContent()).toBe('passed');
    expect(await group.locator('.badge.gate').getAttribute('class')).toContain('s-completed');
    expect(await group.locator('.reasons').count()).toBe(0);
    expect(await group.locator('.no-pr').textContent()).toContain('No pull request was opened');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('says what Insights lacks instead of drawing empty charts, and fits a phone', async () => {
    await startSession('A session with no pull request');
    const { page, problems } = await openPage(web.browser.context, `${web.base}/insights`);
    await page.locator('#insights-groups').waitFor();
    expect(await page.locator('#insights-no-prs').textContent()).toContain('No pull requests');
    expect(await page.locator('#calibration-empty').textContent()).toContain('merged or closed');
    expect(await page.locator('canvas').count()).toBe(0);
    await page.setViewportSize({ width: 390, height: 800 });
    await page.screenshot({ path: join(screenshotDir, 'insights-phone.png'), fullPage: true });
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });
});
