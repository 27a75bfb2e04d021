import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RepoKnowledge } from '../../src/api/api-types.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';
import { launchChromium, openPage, screenshotDir, type Browser } from './chromium.ts';

const token = 'browser-harness-token-0123456789';

const lastUser = (messages: readonly ModelMessage[]) => {
  const m = messages.findLast((x) => x.role === 'user');
  return m?.role === 'user' ? m.content : '';
};
/** The model's replies since the last person's (or harness's) message. */
const turnsSinceUser = (messages: readonly ModelMessage[]) =>
  messages.slice(messages.findLastIndex((m) => m.role === 'user')).filter((m) => m.role === 'assistant').length;

/**
 * The page watching a real harness run: Patchbay as a user runs it (environment-only config, API
 * token, real worker, bubblewrap sandbox, git and `npm test` in the sandbox), a scripted model whose
 * first fix is wrong. The harness's failing check, the agent's second attempt, the passing check on
 * the new commit, the verifier's verdict and a connection the egress proxy refused all reach the
 * open page live; then the repository's knowledge document is edited from the page.
 */
describe('the session page during a real harness run, in Chromium', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;
  let browser: Browser;
  let base: string;

  const model = createScriptedProvider({
    scenario: (messages) => {
      const turn = turnsSinceUser(messages);
      if (lastUser(messages).includes('checks on your commit')) {
        return (
          [
            {
              toolCalls: [
                { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => a + b;\n' } },
              ],
            },
            { text: 'Fixed add: it subtracted.' },
          ] as ScriptedTurn[]
        )[Math.min(turn, 1)]!;
      }
      // First attempt: looks something up on a host the sandbox may not reach, then a wrong fix.
      return (
        [
          {
            toolCalls: [
              {
                name: 'run_shell',
                input: { command: 'curl -sS --max-time 10 https://registry.example.com/add || true' },
              },
            ],
          },
          {
            toolCalls: [
              { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => b - a;\n' } },
            ],
          },
          { text: 'Fixed add.' },
        ] as ScriptedTurn[]
      )[Math.min(turn, 2)]!;
    },
  });

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    await remote.pushCommit(
      'test.js',
      "const assert = require('node:assert');\nassert.strictEqual(require('./add.js')(2, 3), 5);\nconsole.log('ok');\n",
      'test',
    );
    await remote.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
    app = await startTestPatchbay({
      model,
      serve: true,
      env: { PATCHBAY_API_TOKEN: token, PATCHBAY_ALLOW_LOCAL_REPOS: 'true' },
    });
    base = app.url!;
    browser = await launchChromium();
    expect((await browser.context.request.post(`${base}/api/auth`, { data: { token } })).status()).toBe(204);
  });
  afterAll(async () => {
    await browser?.close();
    await app?.dispose();
    await remote?.cleanup();
  });

  it('shows the failing check, the second attempt, the passing check and the verdict as the harness produces them', {
    timeout: 150_000,
  }, async () => {
    const { page, problems } = await openPage(browser.context, `${base}/`);
    await page.fill('#repo', remote.remote);
    await page.fill('#prompt', 'Fix add so 2 + 3 is 5');
    await page.fill('#name', 'Ada Lovelace');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/sessions\/[^/]+$/);
    const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);

    // Live, on the open page: the refused connection, then both checks as timeline notes, in order.
    await page
      .locator('.egress[data-host="registry.example.com"]', { hasText: 'registry.example.com:443' })
      .waitFor({ timeout: 90_000 });
    await page.locator('.note.tone-bad', { hasText: 'Check test failed' }).waitFor({ timeout: 90_000 });
    await page.locator('.note.tone-good', { hasText: 'Check test passed' }).waitFor({ timeout: 90_000 });
    const notes = await page.locator('.note').evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    const failedAt = notes.findIndex((n) => n.includes('Check test failed'));
    expect(failedAt).toBeGreaterThanOrEqual(0);
    expect(notes.findIndex((n) => n.includes('Check test passed'))).toBeGreaterThan(failedAt);

    const done = await waitForStatus(app, id, ['completed', 'failed'], 90_000);
    expect(done.status).toBe('completed');
    const checks = (await app.store.events(id, { types: ['check-finished'] })).map((e) => e.event);
    expect(checks.map((c) => (c.type === 'check-finished' ? [c.command, c.outcome] : []))).toEqual([
      ['npm test', 'failed'],
      ['npm test', 'passed'],
    ]);
    const [failing, passing] = checks.map((c) => (c.type === 'check-finished' ? c.commit : ''));
    // The only connection refused is the one the agent tried (npm's update check is off in the sandbox).
    expect(
      (await app.store.events(id, { types: ['egress-blocked'] })).map((e) =>
        e.event.type === 'egress-blocked' ? e.event.host : '',
      ),
    ).toEqual(['registry.example.com']);
    expect(passing).toBe(done.result?.commit);

    // The Checks tab: one group per commit, newest first, the log of the failure, the verdict on the passing commit.
    await page.keyboard.press('3');
    const second = page.locator(`.check-group[data-commit="${passing}"]`);
    await second.locator('.check[data-outcome="passed"]').waitFor();
    await second.locator('.verdict[data-outcome="passed"]', { hasText: '8/8' }).waitFor();
    const first = page.locator(`.check-group[data-commit="${failing}"]`);
    await first.locator('.check[data-outcome="failed"] summary').click();
    await expect(first.locator('.output').textContent()).resolves.toContain('AssertionError');
    expect(await first.locator('.verdict').count()).toBe(0);
    expect(
      await page.locator('.check-group').evaluateAll((groups) => groups.map((g) => g.getAttribute('data-commit'))),
    ).toEqual([passing, failing]);
    await page.screenshot({ path: join(screenshotDir, 'session-harness-checks.png'), fullPage: true });

    // The list shows the latest commit's checks as passed.
    await page.goto(`${base}/`);
    await page.locator(`#sessions li[data-id="${id}"] .checks-passed`).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("edits the repository's knowledge from the page: the edit is signed, kept over the extraction and refused when incomplete", {
    timeout: 90_000,
  }, async () => {
    const [session] = (await app.store.list({})).filter((s) => s.repo === remote.remote);
    const { page, problems } = await openPage(browser.context, `${base}/sessions/${session!.id}`);
    await page.locator('#status .badge[data-status="completed"]').waitFor();
    await page.keyboard.press('4');
    const checks = page.locator('#knowledge .commands[data-kind="checks"]');
    // What the harness read from package.json.
    await expect(checks.locator('.command-text').first().inputValue()).resolves.toBe('npm test');
    await expect(checks.locator('.source').first().textContent()).resolves.toContain('package.json');
    await page.locator('#knowledge-source[data-source="extracted"]').waitFor();

    // An incomplete row is refused on the page, and nothing is saved.
    await checks.locator('button.add').click();
    await checks.locator('.command-name').nth(1).fill('lint');
    await page.fill('#knowledge-name', 'Ada Lovelace');
    await page.click('#save-knowledge');
    await page.locator('#knowledge .error', { hasText: 'needs a name and a command' }).waitFor();
    const key = encodeURIComponent(remote.remote);
    const before = (await (
      await browser.context.request.get(`${base}/api/repos/${key}/knowledge`)
    ).json()) as RepoKnowledge;
    expect(before.source).toBe('extracted');

    await checks.locator('.command-text').nth(1).fill('node --check add.js');
    await page.fill('#conventions', 'Branches are named fix/<topic>.\n\nCommit messages say why.');
    await page.click('#save-knowledge');
    await page.locator('#knowledge [role=status]', { hasText: 'Saved' }).waitFor();
    await page.locator('#knowledge-source[data-source="edited"]', { hasText: 'edited by Ada Lovelace' }).waitFor();

    const after = (await (
      await browser.context.request.get(`${base}/api/repos/${key}/knowledge`)
    ).json()) as RepoKnowledge;
    expect(after.source).toBe('edited');
    expect(after.edited?.by).toBe('Ada Lovelace');
    expect(after.document.checks).toEqual([
      { name: 'test', command: 'npm test', source: before.document.checks[0]!.source },
      { name: 'lint', command: 'node --check add.js', source: 'edited by Ada Lovelace' },
    ]);
    expect(after.document.conventions).toEqual(['Branches are named fix/<topic>.', 'Commit messages say why.']);
    // The extraction is kept beside the edit, untouched.
    expect(after.extracted.checks).toEqual(before.extracted.checks);

    // A reload shows the saved document.
    await page.reload();
    await page.locator('#status .badge[data-status="completed"]').waitFor();
    await page.click('#tab-knowledge');
    await expect(
      page.locator('#knowledge .commands[data-kind="checks"] .command-text').nth(1).inputValue(),
    ).resolves.toBe('node --check add.js');
    await page.screenshot({ path: join(screenshotDir, 'session-knowledge.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });
});
