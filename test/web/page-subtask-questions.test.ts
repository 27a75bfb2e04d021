import { describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { openPage } from './chromium.ts';
import { usePageFixture } from './page-fixture.ts';

const ada: Actor = { source: 'web', id: 'ada', name: 'Ada' };
const repo = 'https://github.com/acme/widgets';

/**
 * Two sub-tasks ask at once, in Chromium: the parent's page offers each question's answer buttons,
 * and a button answers the sub-task that asked it (not the first one waiting). The message box
 * says which question it answers when more than one is open.
 */
describe("sub-tasks' questions on the parent's page, in Chromium", () => {
  const web = usePageFixture();

  it('shows every open question with its buttons and routes each answer to its own sub-task', {
    timeout: 90_000,
  }, async () => {
    const started = await web.fx.service.start({ thread: { source: 'web' }, actor: ada, text: 'Two parts', repo });
    if (started.kind !== 'started') throw new Error(started.kind);
    const parentId = started.session.id;
    await web.fx.store.transition(parentId, 'start');
    const children = [1, 2].map((index) => ({
      index,
      id: `${parentId}-sub-${index}`,
      title: `Part ${index}`,
      prompt: `Part ${index}`,
      repo,
      branch: `patchbay/two-sub-${index}`,
    }));
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
    await web.fx.store.transition(parentId, 'ask', {
      reason: 'waiting for its sub-tasks',
      patch: { pendingQuestion: null },
    });
    for (const child of children) {
      await web.fx.store.transition(child.id, 'start');
      await web.fx.store.transition(child.id, 'ask', {
        patch: {
          pendingQuestion: {
            questionId: 'q1',
            toolCallId: 'call-q1',
            question: `Which name for part ${child.index}?`,
            choices: [`name-${child.index}a`, `name-${child.index}b`],
          },
        },
      });
      await web.fx.store.noteChildRun(child.id);
    }

    const { page, problems } = await openPage(web.browser.context, `${web.base}/sessions/${parentId}`);
    const rows = page.locator('.question .choices');
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);
    expect(await page.locator('#answering option').allTextContents()).toEqual([
      'Sub-task 1 (Part 1) asks: Which name for part 1?',
      'Sub-task 2 (Part 2) asks: Which name for part 2?',
    ]);

    await page.locator('.question button.choice', { hasText: 'name-2b' }).click();
    await waitFor(
      async () => (await web.fx.store.get(children[1]!.id))?.status === 'queued',
      'the second sub-task answered',
    );
    const first = await web.fx.store.get(children[0]!.id);
    expect(first?.status).toBe('waiting');
    expect(first?.pendingQuestion?.question).toBe('Which name for part 1?');
    const answered = await web.fx.store.events(children[1]!.id, { types: ['user-message'] });
    expect(answered.at(-1)?.event).toMatchObject({ text: 'name-2b', questionId: 'q1' });

    // The answered one loses its buttons; the other keeps them, and the box answers it alone.
    await page.locator('.question .choices').nth(1).waitFor({ state: 'detached' });
    expect(await page.locator('.question .choices button', { hasText: 'name-1a' }).count()).toBe(1);
    expect(await page.locator('#answering').count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });
});
