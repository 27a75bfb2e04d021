import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { openPage, screenshotDir } from './chromium.ts';
import { usePageFixture } from './page-fixture.ts';

const ada: Actor = { source: 'web', id: 'ada', name: 'Ada' };
const repo = 'https://github.com/acme/widgets';

/**
 * A session that fanned out (issue 22), in Chromium: its page lists its sub-tasks (title, status,
 * branch, repository when another, a link to each child's page) and keeps their statuses current
 * while they run; a child's page links back to its parent; the list marks children.
 */
describe('sub-tasks on the session page, in Chromium', () => {
  const web = usePageFixture();

  it('lists the children under the parent, follows their status, and links both ways', {
    timeout: 90_000,
  }, async () => {
    const started = await web.fx.service.start({
      thread: { source: 'web' },
      actor: ada,
      text: 'Add the field to the API and use it in the client',
      repo,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const parentId = started.session.id;
    await web.fx.store.transition(parentId, 'start');
    const children = [
      { index: 1, title: 'Add the field to the API', repo, branch: 'patchbay/field-sub-1' },
      {
        index: 2,
        title: 'Use it in the client',
        repo: 'https://github.com/acme/client',
        branch: 'patchbay/field-sub-2',
      },
    ].map((c) => ({ ...c, id: `${parentId}-sub-${c.index}`, prompt: c.title }));
    await web.fx.store.spawnChildren(parentId, {
      callId: 'call-1',
      requester: ada,
      children,
      thread: { source: 'web' },
      step: {
        events: [
          {
            event: {
              type: 'subtasks-spawned',
              callId: 'call-1',
              children: children.map((c) => ({ sessionId: c.id, ...c })),
            },
          },
        ],
      },
    });
    const [first, second] = children as [(typeof children)[0], (typeof children)[0]];
    await web.fx.store.transition(first.id, 'start');

    const { page, problems } = await openPage(web.browser.context, `${web.base}/sessions/${parentId}`);
    const rows = page.locator('#subtasks li');
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);
    const row = (id: string) => page.locator(`#subtasks li[data-id="${id}"]`);
    expect(await row(first.id).locator('a.title').textContent()).toBe('Add the field to the API');
    expect(await row(first.id).locator('.badge').getAttribute('data-status')).toBe('running');
    expect(await row(first.id).locator('.branch').textContent()).toBe('patchbay/field-sub-1');
    expect(await row(first.id).locator('.repo').count()).toBe(0); // the parent's repository goes unsaid
    expect(await row(second.id).locator('.badge').getAttribute('data-status')).toBe('queued');
    expect(await row(second.id).locator('.repo').textContent()).toContain('https://github.com/acme/client');
    expect(await page.locator('#parent').count()).toBe(0);

    // A child's change is written in its own log, not the parent's: the page follows it anyway.
    await web.fx.store.transition(first.id, 'finish', { patch: { result: { summary: 'done', commit: 'abc123' } } });
    await row(first.id).locator('.badge[data-status="completed"]').waitFor();
    await page.screenshot({ path: join(screenshotDir, 'session-subtasks.png') });

    await row(second.id).locator('a.title').click();
    await page.waitForURL(`${web.base}/sessions/${second.id}`);
    await page.locator('#title', { hasText: 'Use it in the client' }).waitFor();
    const back = page.locator('#parent a');
    expect(await back.textContent()).toBe(started.session.title);
    expect(await page.locator('#subtasks').count()).toBe(0);
    await back.click();
    await page.waitForURL(`${web.base}/sessions/${parentId}`);
    await page.locator('#subtasks li').nth(1).waitFor();

    await page.goto(`${web.base}/`);
    await page.locator(`#sessions li[data-id="${second.id}"] .sub-task`).waitFor();
    expect(await page.locator(`#sessions li[data-id="${parentId}"] .sub-task`).count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });
});
