import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Patchbay } from '../../src/main.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { message } from '../fakes/fake-slack-events.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { CRITIQUE, engineTurn, inputText, isVerifier, PROBE, verifierTurn } from '../helpers/openai-engine-turns.ts';
import { engineResumes, expectPullRequestInThread, modelUsage, pageToolSteps } from '../helpers/engine-session.ts';
import { type SlackGitHubPatchbay, slackChannel, startSlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const API_KEY = 'test-openai-key';
const MODEL = 'gpt-5.5';
const owner = 'octo-org';

type EngineCase = { engine: 'codex' | 'opencode'; label: string; words: string };

/**
 * Codex and OpenCode as the session's engine, end to end, through the composition configured from
 * the environment only (AGENT_ENGINE=codex, OPENAI_API_KEY and OPENAI_BASE_URL at the loopback
 * Responses fake; Slack in, GitHub out; each real CLI from npm in the bubblewrap sandbox, its model
 * traffic through Patchbay's relay). OpenCode is chosen by the request's words ("with opencode:").
 * The fake scripts the model's turns by the task's words, so the CLIs make real tool calls: Codex's
 * `exec_command` and freeform `apply_patch`, OpenCode's `bash` and `apply_patch`.
 */
describe.each<EngineCase>([
  { engine: 'codex', label: 'Codex', words: '' },
  { engine: 'opencode', label: 'OpenCode', words: 'with opencode: ' },
])('$label as the session engine, end to end', ({ engine, label, words }) => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let openai: FakeOpenAI;
  let upstream: RemoteFixture;
  let patchbay: SlackGitHubPatchbay;
  let app: Patchbay;
  let host: string;
  let hosted: string;
  const verifierCalls = new Map<string, number>();

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await upstream.pushCommit('README.md', '# web\n', 'init');
    hosted = (await github.addRepo(owner, 'web', upstream.remote, 77)).gitDir;
    openai = await startFakeOpenAI({
      apiKey: API_KEY,
      responses: (body) => (isVerifier(body) ? verifierTurn(body, verifierCalls) : engineTurn(body)),
    });
    host = new URL(github.gitUrl).host;
    patchbay = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      queue: { pollingIntervalSeconds: 0.5 },
      env: {
        SANDBOX_EGRESS_ALLOW: 'none',
        // OpenCode is a Bun program: its JavaScript heap reserves more address space than the default 3 GB data limit allows.
        SANDBOX_MEMORY_MB: '8192',
        AGENT_ENGINE: 'codex',
        MODEL_PROVIDER: 'openai',
        MODEL,
        OPENAI_API_KEY: API_KEY,
        OPENAI_BASE_URL: openai.baseUrl,
      },
    });
    app = patchbay.app;
  }, 120_000);
  afterAll(async () => {
    await patchbay?.close();
    await openai?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  const channel = slackChannel({
    app: () => app,
    slack: () => slack,
    signingSecret: SIGNING_SECRET,
    channel: CHANNEL,
    user: 'U0ALICE01',
    repoUrl: () => `https://${host}/${owner}/web`,
  });
  const { post, threadText } = channel;
  const mention = (task: string) => channel.mention(`${words}${task}`);
  const engineCalls = (marker: string) =>
    openai.calls.filter((c) => !isVerifier(c.body) && inputText(c.body).includes(marker));

  it('a mention ends with a verified PR in the thread; the critique resumes the same engine session and the rework lands on the same branch', {
    timeout: 420_000,
  }, async () => {
    const { session, threadTs } = await mention('pr-case: add a changes file to');
    const { done } = await expectPullRequestInThread({
      app,
      github,
      sessionId: session.id,
      repo: `${owner}/web`,
      threadText: () => threadText(threadTs),
      timeoutMs: 360_000,
    });
    expect(done.result?.summary).toContain(`Engine: ${label}`);

    // The fake saw the real key on every call; the sandbox never did, in its environment or its files.
    const calls = engineCalls('pr-case');
    expect(calls.length).toBeGreaterThanOrEqual(5);
    for (const call of calls) expect(call.headers.authorization).toBe(`Bearer ${API_KEY}`);
    const probe = calls.map((c) => inputText(c.body)).find((t) => t.includes('--- probe done')) ?? '';
    expect(probe).toContain('PATCHBAY_RELAY_TOKEN=pbrelay-');
    expect(probe).not.toContain(API_KEY);
    expect(probe).toMatch(/--- files with the key:\\n--- probe done/);

    // The critique went back into the same engine session: its request carries the first attempt's conversation.
    const rework = calls.find((c) => inputText(c.body).includes(CRITIQUE))!;
    expect(inputText(rework.body)).toContain('Added CHANGES.md.');
    expect(inputText(rework.body)).toContain('--- probe done');
    const resumes = await engineResumes(app, session.id);
    expect(resumes).toHaveLength(2);
    expect(resumes[0]).toMatchObject({ engine });
    expect(resumes[1]).toEqual(resumes[0]);

    // The verifier failed the first attempt once; the rework is what the branch holds, pushed to the same branch.
    const verdicts = (await app.store.events(session.id, { types: ['verification-finished'] })).map((e) => e.event);
    expect(verdicts.map((v) => (v.type === 'verification-finished' ? v.outcome : ''))).toEqual(['failed', 'passed']);
    expect(await git(hosted, 'show', `${done.branch}:CHANGES.md`)).toBe('# Changes\n- reworked');
    const pushes = (await app.store.events(session.id, { types: ['branch-pushed'] })).map((e) => e.event);
    // The harness pushes once the verifier passes: the first attempt never left the sandbox, one pull request.
    expect(pushes.length).toBeGreaterThanOrEqual(1);
    expect(github.pulls.filter((p) => p.head === done.branch)).toHaveLength(1);
    expect(new Set(pushes.map((p) => (p.type === 'branch-pushed' ? p.branch : '')))).toEqual(new Set([done.branch]));

    // The page's events show the engine's commands and file changes, and usage with its cost.
    const steps = await pageToolSteps(app, session.id);
    expect(steps).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'run_shell', input: { command: PROBE } }),
        expect.objectContaining({ name: 'edit_file', input: expect.objectContaining({ path: 'CHANGES.md' }) }),
        expect.objectContaining({ name: 'run_shell', input: { command: 'echo "- reworked" >> CHANGES.md' } }),
      ]),
    );
    const engineUsage = await modelUsage(app, session.id, MODEL);
    expect(engineUsage.length).toBeGreaterThanOrEqual(calls.length);
    const stored = await app.store.get(session.id);
    expect(stored!.usage.inputTokens).toBeGreaterThan(0);
    expect(openai.rejections).toEqual([]);
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });

  it('"stop" during the engine\'s command ends the run within 10 seconds, its processes gone', {
    timeout: 300_000,
  }, async () => {
    const { session, threadTs } = await mention('stop-case: wait a while in');
    await waitFor(
      async () => pgrep(`sleep 300; echo stopped-${engine}`).length > 0,
      'the command running in the sandbox',
      240_000,
    );
    const stoppedAt = Date.now();
    await post(message({ user: 'U0ALICE01', text: 'stop', threadTs }));
    const done = await waitForStatus(app, session.id, ['cancelled', 'failed', 'completed'], 30_000);
    expect(done.status).toBe('cancelled');
    await waitFor(async () => pgrep(`sleep 300; echo stopped-${engine}`).length === 0, 'the command gone', 10_000);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
  });

  it("the engine's question reaches the thread and the answer resumes its session", { timeout: 420_000 }, async () => {
    const { session, threadTs } = await mention('ask-case: add a notes file to');
    const waiting = await waitForStatus(app, session.id, ['waiting', 'failed', 'completed'], 240_000);
    expect(waiting.status).toBe('waiting');
    await waitFor(
      async () => threadText(threadTs).some((t) => t.includes('Should the file be NOTES.md or notes.txt?')),
      'the question in the thread',
      30_000,
    );
    await post(message({ user: 'U0ALICE01', text: 'NOTES.md please', threadTs }));
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 300_000);
    expect(done.status).toBe('completed');
    const answered = engineCalls('NOTES.md please')[0]!;
    // The same engine session: the answer follows the question in one conversation.
    expect(inputText(answered.body)).toContain('QUESTION: Should the file be NOTES.md or notes.txt?');
    expect(await git(hosted, 'show', `${done.branch}:NOTES.md`)).toBe('notes');
  });

  it('a budget smaller than the run uses stops the relay and pauses the run with the reason', {
    timeout: 300_000,
  }, async () => {
    const { session, threadTs } = await mention('budget-case: do something costly in');
    const paused = await waitForStatus(app, session.id, ['waiting', 'failed', 'completed'], 240_000);
    expect(paused.status).toBe('waiting');
    const reached = (await app.store.events(session.id, { types: ['budget-reached'] })).map((e) => e.event);
    expect(reached).toEqual([expect.objectContaining({ type: 'budget-reached', kind: 'cost' })]);
    // The relay forwarded the one call that spent the budget, then refused every retry.
    expect(engineCalls('budget-case').length).toBe(1);
    await waitFor(
      async () => threadText(threadTs).some((t) => /budget/i.test(t)),
      'the budget pause in the thread',
      30_000,
    );
  });
});

function pgrep(pattern: string): string {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
