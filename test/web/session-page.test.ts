import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionDiff } from '../../src/api/api-types.ts';
import {
  startFakeAnthropic,
  type AnthropicReply,
  type AnthropicRequest,
  type FakeAnthropic,
} from '../fakes/fake-anthropic.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { launchChromium, openPage, screenshotDir, type Browser } from './chromium.ts';

/** A gate the test opens: the fake model holds its stream at it. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const firstUserText = (body: AnthropicRequest) => {
  const content = body.messages[0]?.content;
  return typeof content === 'string'
    ? content
    : (content?.map((b) => (b.type === 'text' ? String(b.text) : '')).join('') ?? '');
};
const turnOf = (body: AnthropicRequest) => body.messages.filter((m) => m.role === 'assistant').length;

describe('the session page in Chromium, against a running Patchbay with a scripted model', () => {
  let remote: RemoteFixture;
  let anthropic: FakeAnthropic;
  let app: PatchbayFixture;
  let browser: Browser;
  let base: string;
  const firstTurn = gate();

  // The model, at the network boundary: Anthropic's streaming Messages API. The first session reads
  // the README (its text held mid-stream), asks which greeting to use, writes it and finishes; the
  // second never finishes its first turn, so it can be stopped.
  const script = (body: AnthropicRequest): AnthropicReply => {
    if (firstUserText(body).includes('Count sheep'))
      return { content: [{ type: 'text', text: 'Counting sheep, one by one, for a long while.' }], stall: true };
    switch (turnOf(body)) {
      case 0:
        return {
          content: [
            { type: 'text', text: 'Let me read the README before changing it.' },
            { type: 'tool_use', name: 'run_shell', input: { command: 'cat README.md' } },
          ],
          hold: firstTurn.promise,
        };
      case 1:
        return {
          content: [
            {
              type: 'tool_use',
              name: 'ask_user',
              input: {
                question: 'Which greeting should the README use?',
                choices: ['Hello', 'Howdy'],
                recommended: 'Howdy',
              },
            },
          ],
        };
      case 2:
        return {
          content: [
            {
              type: 'tool_use',
              name: 'write_file',
              input: { path: 'README.md', content: '# Demo\n\nHowdy, world!\n' },
            },
          ],
        };
      default:
        return { content: [{ type: 'text', text: 'The README now greets with Howdy.' }] };
    }
  };

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('README.md', '# Demo\n\nHello, world!\n', 'Initial commit');
    anthropic = await startFakeAnthropic({ script });
    app = await startTestPatchbay({
      serve: true,
      env: {
        MODEL_PROVIDER: 'anthropic',
        MODEL: 'claude-sonnet-4-6',
        ANTHROPIC_API_KEY: 'test-anthropic-key',
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
        // The remote is a bare repository on this machine.
        PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
      },
    });
    base = app.url!;
    browser = await launchChromium();
  });
  afterAll(async () => {
    firstTurn.open();
    await browser?.close();
    await app?.dispose();
    await anthropic?.close();
    await remote?.cleanup();
  });

  it('starts a session from the form, streams text and tool calls live, takes an answer, survives a reload, shows the pushed diff', {
    timeout: 120_000,
  }, async () => {
    const { page, problems } = await openPage(browser.context, `${base}/`);
    await page.fill('#repo', remote.remote);
    await page.fill('#prompt', 'Greet in the README');
    await page.fill('#name', 'Ada Lovelace');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/sessions\/[^/]+$/);
    const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);

    // The model's text, as it streams: on the page while the turn is still open and nothing is stored.
    const streaming = page.locator('.item-streaming .text');
    await streaming.filter({ hasText: 'Let me' }).waitFor();
    expect(await app.store.events(id, { types: ['assistant-message'] })).toEqual([]);
    await page
      .locator('.item-user', { hasText: 'Greet in the README' })
      .locator('b', { hasText: 'Ada Lovelace' })
      .waitFor();

    // Reloaded mid-run: the log is replayed, and what is live after it comes on top, once.
    await page.reload();
    await page.locator('.item-user', { hasText: 'Greet in the README' }).waitFor();
    firstTurn.open();
    await page.locator('.item-assistant .text', { hasText: 'Let me read the README before changing it.' }).waitFor();
    expect(await page.locator('.item-streaming').count()).toBe(0);

    const shell = page.locator('details.tool', { hasText: 'run_shell' });
    await shell.locator('.state', { hasText: /^ok · / }).waitFor();
    await shell.locator('summary').click();
    await expect(shell.locator('.output').textContent()).resolves.toContain('Hello, world!');
    await expect(shell.locator('.input').textContent()).resolves.toContain('cat README.md');

    // The question, answered from the page with one of its buttons.
    const question = page.locator('.question', { hasText: 'Which greeting should the README use?' });
    await question.locator('button', { hasText: 'Howdy' }).click();
    await question.locator('.answered', { hasText: 'Howdy' }).waitFor();
    await page.locator('#status .badge[data-status="completed"]').waitFor({ timeout: 60_000 });
    const answer = (await app.store.events(id, { types: ['user-message'] })).at(-1)?.event;
    expect(answer).toMatchObject({
      type: 'user-message',
      text: 'Howdy',
      actor: { source: 'web', name: 'Ada Lovelace' },
      questionId: expect.any(String),
    });

    // No event twice, after a reload and a live stream: one item per stored message and tool call.
    const events = (await app.store.events(id)).map((e) => e.event);
    const count = (type: string) => events.filter((e) => e.type === type).length;
    expect(await page.locator('.item-user').count()).toBe(count('user-message'));
    expect(await page.locator('.item-assistant').count()).toBe(count('assistant-message'));
    expect(await page.locator('details.tool').count()).toBe(count('tool-start'));
    for (const tool of ['run_shell', 'write_file'])
      expect(await page.locator('details.tool', { hasText: tool }).count()).toBe(1);
    await page.screenshot({ path: join(screenshotDir, 'session-timeline.png'), fullPage: true });

    // The diff of the pushed branch, by keyboard: "2" opens the Diff tab.
    await page.keyboard.press('2');
    const readme = page.locator('.file[data-path="README.md"]');
    await readme.locator('.line.add', { hasText: 'Howdy, world!' }).waitFor();
    await readme.locator('.line.del', { hasText: 'Hello, world!' }).waitFor();
    const session = await waitForStatus(app, id, ['completed']);
    const pushed = await remote.remoteBranch(session.branch!);
    expect(pushed).toBe(session.result?.commit);
    const diff = (await page.evaluate(
      async (sid) => (await fetch(`/api/sessions/${sid}/diff`)).json(),
      id,
    )) as SessionDiff;
    expect(diff).toMatchObject({ state: 'ready', head: pushed, branch: session.branch, commits: [{ sha: pushed }] });
    if (diff.state !== 'ready') throw new Error('no diff');
    expect(diff.files.map((f) => [f.path, f.status, f.additions, f.deletions])).toEqual([
      ['README.md', 'modified', 1, 1],
    ]);
    expect(diff.files[0]!.patch).toBe(
      `${(await git(remote.remote, 'diff', '--full-index', diff.base, pushed)).split('\n').slice(4).join('\n')}\n`,
    );
    // One commit of it.
    await page.locator('.chip', { hasText: pushed.slice(0, 7) }).click();
    await page.locator('.chip.active', { hasText: pushed.slice(0, 7) }).waitFor();
    await readme.locator('.line.add', { hasText: 'Howdy, world!' }).waitFor();
    await page.screenshot({ path: join(screenshotDir, 'session-diff.png'), fullPage: true });

    await page.keyboard.press('3');
    await page.locator('#checks').waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows a session started elsewhere in the live list, filters it, and stops it from its page', {
    timeout: 120_000,
  }, async () => {
    const { page, problems } = await openPage(browser.context, `${base}/`);
    await page.locator('#sessions li').first().waitFor();
    const created = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        repo: remote.remote,
        prompt: 'Count sheep in the README',
        author: { name: 'Grace Hopper' },
      }),
    });
    const { id } = (await created.json()) as { id: string };
    // The list hears about it without a reload, and its status changes live.
    const row = page.locator(`#sessions li[data-id="${id}"]`);
    await row.locator('.badge[data-status="running"]').waitFor();
    await expect(row.locator('.meta').textContent()).resolves.toContain('Grace Hopper');
    await page.selectOption('#filter-status', 'completed');
    await page.locator(`#sessions li[data-id="${id}"]`).waitFor({ state: 'detached' });
    expect(await page.locator('#sessions li').count()).toBe(1);
    expect(new URL(page.url()).search).toBe('?status=completed');
    await page.screenshot({ path: join(screenshotDir, 'list-filtered.png'), fullPage: true });
    await page.selectOption('#filter-status', '');
    await row.locator('a.title').click();
    await page.waitForURL(`${base}/sessions/${id}`);

    // Its model is mid-turn (the stream stalls after its first words).
    await page.locator('#status .badge[data-status="running"]').waitFor();
    await waitFor(
      async () => anthropic.calls.some((c) => firstUserText(c.body).includes('Count sheep')),
      'the model call',
    );
    await page.click('#stop');
    await page.locator('#status .badge[data-status="cancelled"]').waitFor();
    expect((await app.store.get(id))?.status).toBe('cancelled');
    await waitFor(
      async () => (await app.store.events(id, { types: ['status-changed'] })).length >= 2,
      'the stop in the log',
    );
    await page.goto(`${base}/`);
    await page.locator(`#sessions li[data-id="${id}"] .badge[data-status="cancelled"]`).waitFor();
    await page.screenshot({ path: join(screenshotDir, 'list.png'), fullPage: true });
    expect(problems).toEqual([]);
    expect(anthropic.rejections).toEqual([]);
    await page.close();
  });
});
