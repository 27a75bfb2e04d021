import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { launchChromium, openPage, type Browser } from './chromium.ts';
import { createSessionOverApi } from '../helpers/server-process.ts';

const PUBLISH = 'echo once >> published.txt; npm publish >/dev/null 2>&1; true';
const LOOK = 'cat published.txt 2>/dev/null || echo absent';

function publishScenario(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.at(-1);
  const content = last?.role === 'tool' ? last.content : '';
  if (last?.role !== 'tool') return { toolCalls: [{ name: 'run_shell', input: { command: PUBLISH } }] };
  if (content.includes('once')) return { text: 'Published once.' };
  if (content.includes('absent')) return { toolCalls: [{ name: 'run_shell', input: { command: PUBLISH } }] };
  return { toolCalls: [{ name: 'run_shell', input: { command: LOOK } }] };
}

describe('approvals on the session page, in Chromium (scripted model, APPROVALS=on)', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;
  let browser: Browser;

  beforeAll(async () => {
    remote = await createRemote();
    app = await startTestPatchbay({
      serve: true,
      model: createScriptedProvider({ scenario: publishScenario }),
      // Publishing is refused unless an operator's rule allows it (issue 36): this one asks.
      env: { APPROVALS: 'on', APPROVAL_RULES: 'publish=ask', PATCHBAY_ALLOW_LOCAL_REPOS: 'true' },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.dispose();
    await remote?.cleanup();
  });

  it('shows the held command with Approve once / Deny; Deny with a reason, then Approve once, runs it once', {
    timeout: 120_000,
  }, async () => {
    const id = await createSessionOverApi(app, { repo: remote.remote, prompt: 'Publish the package' });
    const { page, problems } = await openPage(browser.context, `${app.url}/sessions/${id}`);
    // The name this browser signs with (the composer saves it), so the decision is Ada's.
    await page.evaluate(() => localStorage.setItem('patchbay.name', 'Ada'));
    await page.reload();
    const panel = page.locator('section.approval');
    await panel.locator('pre', { hasText: PUBLISH }).waitFor();
    await expect(panel.locator('h3').textContent()).resolves.toBe('Approval needed (publish)');
    await page.fill('#deny-reason', 'releases go out from CI');
    await page.click('#deny');
    await waitFor(
      async () => (await app.store.events(id, { types: ['approval-requested'] })).length === 2 || undefined,
      'the second request',
    );
    await waitForStatus(app, id, ['waiting']);
    await page.locator('.note', { hasText: 'Denied by Ada from web: releases go out from CI' }).waitFor();
    await panel.locator('pre', { hasText: PUBLISH }).waitFor();
    await page.click('#approve');
    const done = await waitForStatus(app, id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');
    const outputs = (await app.store.events(id, { types: ['tool-end'] })).map((e) =>
      e.event.type === 'tool-end' ? e.event.output : '',
    );
    expect(outputs).toEqual([
      'Not approved: Ada denied it: releases go out from CI. The command did not run.',
      'Exit code: 0\nstdout:\nabsent\n',
      'Exit code: 0',
      'Exit code: 0\nstdout:\nonce\n',
    ]);
    await panel.waitFor({ state: 'detached' });
    expect(problems).toEqual([]);
  });
});
