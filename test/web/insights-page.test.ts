import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InsightsReport } from '../../src/api/insights-report.ts';
import type { EventOf } from '../../src/core/events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createOutcomeStore } from '../../src/sessions/harness-stores/outcome-store.ts';
import { createGitHubClient } from '../../integrations/github/github-client.ts';
import { createGitHubStore } from '../../integrations/github/github-store.ts';
import { backfillOutcomes } from '../../integrations/github/outcome-tracker.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { pullActions } from '../fakes/fake-github-outcomes.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from '../github/github-fixture.ts';
import { deliveriesWorked, waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { passingVerdict, scriptedVerifier, verdict } from '../helpers/scripted-verifier.ts';
import { launchChromium, openPage, screenshotDir, type Browser } from './chromium.ts';

const owner = 'octo-org';
const repo = 'shop';
const installationId = 31;
const where = { owner, repo, installationId };

/** The agent writes the file the request names (`add <name>.txt`), then says so. */
function decide(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.findLastIndex((m) => m.role === 'user');
  const text = last >= 0 ? (messages[last] as { content: string }).content : '';
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  const name = /add (\w+)\.txt/.exec(text)?.[1] ?? 'other';
  return turn === 0
    ? { toolCalls: [{ name: 'write_file', input: { path: `${name}.txt`, content: `${name}\n` } }] }
    : { text: `Added ${name}.txt.` };
}

/**
 * Outcomes end to end: four sessions, each asked for on a GitHub issue, open pull requests on the
 * fake GitHub; people then review, push to, merge, close and revert them there, and the fake sends
 * the webhooks GitHub would (signed, from the published examples). The fourth PR is merged while
 * Patchbay is not told (as one opened before outcome tracking) and is read back by the backfill.
 * The API and the Insights page in Chromium show the result, with the verifier's calibration.
 */
describe('Insights: what became of the pull requests sessions opened', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let browser: Browser;
  let actions: ReturnType<typeof pullActions>;
  let alice: ReturnType<FakeGitHub['addUser']>;
  let bob: ReturnType<FakeGitHub['addUser']>;
  const pulls: Record<string, { sessionId: string; number: number }> = {};

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    alice = fake.addUser('alice');
    bob = fake.addUser('bob');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write', bob: 'write' });
    // Verdicts in session order: 8, 7 (correctness partly), 6 (completeness and correctness partly), 8.
    const verifier = scriptedVerifier(
      passingVerdict,
      verdict([2, 2, 1, 2], 'Mostly right.'),
      verdict([2, 1, 1, 2], 'Partly done.'),
      passingVerdict,
    );
    app = await startGitHubPatchbay(
      fake,
      createScriptedProvider({ scenario: decide }),
      {},
      { verifierModel: verifier },
    );
    actions = pullActions(fake, { url: () => `${app.url}/github/webhooks`, secret: webhookSecret }, where);
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  /** Asks for `add <name>.txt` on issue `number` and waits for the session's pull request. */
  async function openPull(name: string, number: number) {
    const comment = fake.addComment(
      owner,
      repo,
      number,
      alice,
      `@patchbay-test please add ${name}.txt with its name in it`,
    );
    const payload = issueCommentEvent(where, {
      number,
      title: `Add ${name}`,
      body: `We need ${name}.txt.`,
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    expect((await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number, kind: 'issue' }),
      `the session for ${name}`,
    );
    expect((await waitForStatus(app, session.id, ['completed', 'failed'], 90_000)).status).toBe('completed');
    const opened = (await app.store.events(session.id, { types: ['pr-opened'] })).map(
      (e) => e.event as EventOf<'pr-opened'>,
    );
    pulls[name] = { sessionId: session.id, number: opened[0]!.number };
  }

  const insights = async (query: string) => {
    const response = await fetch(`${app.url}/api/insights?${query}`);
    return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
  };
  const outcome = (name: string) =>
    app.database.db
      .selectFrom('pull_outcomes')
      .selectAll()
      .where('session_id', '=', pulls[name]!.sessionId)
      .executeTakeFirstOrThrow();

  it("records merges (by whom, with people's commits and reviews), closes, reverts and CI after the merge from the webhooks", {
    timeout: 240_000,
  }, async () => {
    await openPull('alpha', 501);
    await openPull('beta', 502);
    await openPull('gamma', 503);
    await openPull('delta', 504);

    await actions.review(pulls.alpha!.number, bob, 'approved');
    await actions.pushToPull(pulls.alpha!.number, bob, 'alpha-extra.txt');
    const alphaMerge = await actions.merge(pulls.alpha!.number, alice);
    await actions.status(alphaMerge, 'main', 'success');
    await actions.close(pulls.beta!.number, alice);
    const gammaMerge = await actions.merge(pulls.gamma!.number, alice);
    await actions.status(gammaMerge, 'main', 'failure');
    const revert = await actions.revertMerge(gammaMerge, 'main', bob);
    await deliveriesWorked(app, 60_000);

    expect(await git(fake.repo(owner, repo).gitDir, 'log', '-1', '--format=%s', 'main')).toBe(
      `Revert "Merge pull request #${pulls.gamma!.number} from ${owner}/${(await outcome('gamma')).branch}"`,
    );
    expect(await outcome('alpha')).toMatchObject({
      state: 'merged',
      finished_by: 'alice',
      merge_commit: alphaMerge,
      review_ids: [expect.any(Number)],
      merge_ci: 'success',
      reverted_at: null,
    });
    expect((await outcome('alpha')).human_commits).toHaveLength(1);
    expect(await outcome('beta')).toMatchObject({
      state: 'closed',
      finished_by: 'alice',
      merge_commit: null,
      human_commits: [],
      review_ids: [],
    });
    expect(await outcome('gamma')).toMatchObject({
      state: 'merged',
      finished_by: 'alice',
      merge_commit: gammaMerge,
      revert_commit: revert,
      merge_ci: 'failure',
    });
    expect(await outcome('delta')).toMatchObject({ state: 'open', finished_at: null });
    expect(fake.refused).toEqual([]);
  });

  it('reads a pull request it was not told about from GitHub (the backfill)', { timeout: 60_000 }, async () => {
    // As if delta had been opened before outcome tracking, and merged meanwhile.
    await app.database.db.deleteFrom('pull_outcomes').where('session_id', '=', pulls.delta!.sessionId).execute();
    const pull = fake.pulls.find((p) => p.number === pulls.delta!.number)!;
    pull.state = 'closed';
    pull.merged = {
      sha: 'd'.repeat(40),
      by: { login: 'alice', id: alice.id, type: 'User' },
      at: new Date().toISOString(),
    };
    pull.reviews = [
      {
        id: fake.nextId(),
        user: { login: 'bob', id: bob.id, type: 'User' },
        state: 'APPROVED',
        body: 'ok',
        submittedAt: new Date().toISOString(),
      },
    ];
    const log = pino({ level: 'silent' });
    const client = createGitHubClient({
      appId: String(fake.appId),
      privateKey: fake.privateKey,
      apiUrl: fake.apiUrl,
      gitUrl: fake.gitUrl,
      store: createGitHubStore(app.database.db),
      log,
    });
    const done = await backfillOutcomes({ client, ledger: createOutcomeStore(app.database.db), log });
    // delta, read and finished; alpha, beta and gamma are no longer open, so they are not read again.
    expect(done).toEqual({ read: 1, finished: 1 });
    expect(await outcome('delta')).toMatchObject({
      state: 'merged',
      finished_by: 'alice',
      merge_commit: 'd'.repeat(40),
      review_ids: [expect.any(Number)],
    });
    expect(fake.refused).toEqual([]);
  });

  it('answers GET /api/insights per group, with the calibration, as JSON and CSV, and refuses a bad query', async () => {
    const { status, text } = await insights('groupBy=surface');
    expect(status).toBe(200);
    const report = JSON.parse(text) as InsightsReport;
    expect(report.groups.map((g) => g.key)).toEqual(['github']);
    expect(report.totals).toMatchObject({
      sessions: 4,
      prsOpened: 4,
      merged: 3,
      closed: 1,
      mergeRate: 0.75,
      reverts: 1,
      mergeCiFailures: 1,
      humanCommitsPerMerged: 1 / 3,
      reviewRoundsPerPr: 0.5,
    });
    expect(report.totals.medianTimeToMergeMs).toBeGreaterThan(0);
    expect(report.totals.medianToPrMs).toBeGreaterThan(0);
    expect(report.totals.medianFirstReplyMs).toBeGreaterThan(0);
    expect(report.calibration.byBand).toEqual([
      { band: '0-4', decided: 0, merged: 0, mergeRate: null },
      { band: '5', decided: 0, merged: 0, mergeRate: null },
      { band: '6', decided: 1, merged: 1, mergeRate: 1 },
      { band: '7', decided: 1, merged: 0, mergeRate: 0 },
      { band: '8', decided: 2, merged: 2, mergeRate: 1 },
    ]);
    const row = (name: string) => report.pulls.find((p) => p.sessionId === pulls[name]!.sessionId);
    expect(report.pulls).toHaveLength(4);
    expect(row('alpha')).toMatchObject({
      number: pulls.alpha!.number,
      state: 'merged',
      finishedBy: 'alice',
      humanCommits: 1,
      reviewRounds: 1,
      reverted: false,
      mergeCi: 'success',
      verdictTotal: 8,
    });
    expect(row('beta')).toMatchObject({ state: 'closed', finishedBy: 'alice', humanCommits: 0, verdictTotal: 7 });
    expect(row('gamma')).toMatchObject({ state: 'merged', reverted: true, mergeCi: 'failure', verdictTotal: 6 });
    const dimension = (d: string, score: number) =>
      report.calibration.byDimension.find((r) => r.dimension === d && r.score === score);
    expect(dimension('correctness', 1)).toMatchObject({ decided: 2, merged: 1, mergeRate: 0.5 });
    expect(dimension('completeness', 2)).toMatchObject({ decided: 3, merged: 2 });

    const csv = await insights('groupBy=taskClass&format=csv');
    expect(csv.status).toBe(200);
    expect(csv.type).toContain('text/csv');
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toBe(
      'taskClass,sessions,prsOpened,merged,closed,mergeRate,medianTimeToMergeMs,humanCommitsPerMerged,reviewRoundsPerPr,reverts,mergeCiFailures,costPerMergedUsd,medianFirstReplyMs,medianToPrMs',
    );
    expect(lines.at(-1)).toMatch(/^\(all\),4,4,3,1,0\.75,/);

    for (const bad of ['groupBy=colour', 'from=yesterday', 'from=2026-02-01&to=2026-01-01', 'format=xml', 'limit=3']) {
      const refused = await insights(bad);
      expect(refused.status, bad).toBe(400);
      expect(JSON.parse(refused.text)).toMatchObject({ error: 'invalid_input' });
    }
  });

  it('shows the figures, the charts and the calibration table on the Insights page, linked from the session list', {
    timeout: 90_000,
  }, async () => {
    const { page, problems } = await openPage(browser.context, `${app.url}/`);
    await page.click('#insights-link');
    await page.locator('#insights-groups').waitFor();
    expect(new URL(page.url()).pathname).toBe('/insights');
    await page.selectOption('#insights-group', 'surface');
    const all = page.locator('#insights-groups tr[data-key="all"]');
    await page.locator('#insights-groups tr[data-key="github"]').waitFor();
    expect(await all.locator('td[data-col="mergeRate"]').textContent()).toBe('75%');
    expect(await all.locator('td[data-col="merged"]').textContent()).toBe('3');
    expect(await all.locator('td[data-col="reverts"]').textContent()).toBe('1');
    expect(await all.locator('td[data-col="humanCommitsPerMerged"]').textContent()).toBe('0.3');
    expect(await page.locator('#calibration-bands td[data-band="7"]').textContent()).toBe('0% (0 of 1)');
    expect(await page.locator('#calibration-bands td[data-band="8"]').textContent()).toBe('100% (2 of 2)');
    expect(
      await page.locator('#calibration-dimensions tr[data-dimension="correctness"] td[data-score="1"]').textContent(),
    ).toBe('50% (1 of 2)');
    const gamma = page.locator(`#insights-pulls tr[data-session="${pulls.gamma!.sessionId}"]`);
    expect(await gamma.locator('td[data-col="state"]').textContent()).toBe('merged');
    expect(await gamma.locator('td[data-col="reverted"]').textContent()).toBe('yes');
    expect(
      await page.locator(`#insights-pulls tr[data-session="${pulls.beta!.sessionId}"] td[data-col="by"]`).textContent(),
    ).toBe('alice');
    // Chart.js drew on each canvas: some pixels are not transparent.
    for (const id of ['chart-merge-rate', 'chart-prs', 'chart-calibration']) {
      const painted = await page.evaluate((canvasId) => {
        const canvas = document.getElementById(canvasId) as HTMLCanvasElement;
        const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        let count = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) count += 1;
        return count;
      }, id);
      expect(painted, id).toBeGreaterThan(100);
    }
    const csv = await page.locator('#insights-csv').getAttribute('href');
    expect(csv).toContain('format=csv');
    await page.screenshot({ path: `${screenshotDir}/insights.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });
});
