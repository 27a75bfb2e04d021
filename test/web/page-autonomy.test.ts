import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';
import { launchChromium, openPage, type Browser } from './chromium.ts';
import { createSessionOverApi } from '../helpers/server-process.ts';

describe("a session's autonomy on the page, and a repository's set on the Repo tab (Chromium, scripted model)", () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;
  let browser: Browser;

  beforeAll(async () => {
    remote = await createRemote();
    app = await startTestPatchbay({
      serve: true,
      // Never changes anything: a plan-first session shows its plan, any other finishes without changes.
      model: createScriptedProvider({ scenario: () => ({ text: 'Plan: add NOTES.md with one line.' }) }),
      env: { PATCHBAY_ALLOW_LOCAL_REPOS: 'true' },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.dispose();
    await remote?.cleanup();
  });

  const start = async (prompt: string) => {
    return createSessionOverApi(app, { repo: remote.remote, prompt });
  };

  it('shows plan-first in the header with the plan asked; the Repo tab saves ask-before-push, which the next session works under', {
    timeout: 120_000,
  }, async () => {
    const id = await start('plan first: add notes');
    await waitForStatus(app, id, ['waiting']);
    const { page, problems } = await openPage(browser.context, `${app.url}/sessions/${id}`);
    const badge = page.locator('#autonomy');
    await badge.waitFor();
    await expect(badge.textContent()).resolves.toBe('plan-first');
    await expect(badge.getAttribute('title')).resolves.toContain("from the requester's words");
    await page.locator('.question', { hasText: 'Reply go to start, or say what to change.' }).waitFor();

    await page.click('#tab-knowledge');
    await page.selectOption('#repo-autonomy', 'ask-before-push');
    await page.fill('#knowledge-name', 'Ada');
    await page.click('#save-knowledge');
    await page.locator('.saved', { hasText: 'Saved' }).waitFor();
    const stored = await fetch(`${app.url}/api/repos/${encodeURIComponent(remote.remote)}/knowledge`);
    expect(((await stored.json()) as { document: { autonomy?: string } }).document.autonomy).toBe('ask-before-push');

    const next = await start('tidy nothing');
    const done = await waitForStatus(app, next, ['completed', 'failed', 'waiting'], 60_000);
    expect(done.status).toBe('completed');
    const set = (await app.store.events(next, { types: ['autonomy-set'] })).map((e) => e.event);
    expect(set).toEqual([{ type: 'autonomy-set', level: 'ask-before-push', source: 'repository' }]);
    expect(problems).toEqual([]);
  });
});
