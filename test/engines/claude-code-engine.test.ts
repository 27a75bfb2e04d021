import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Patchbay } from '../../src/main.ts';
import {
  type AnthropicReply,
  type AnthropicRequest,
  type FakeAnthropic,
  startFakeAnthropic,
} from '../fakes/fake-anthropic.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { message } from '../fakes/fake-slack-events.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { passingVerdict, verdict } from '../helpers/scripted-verifier.ts';
import { engineResumes, expectPullRequestInThread, modelUsage, pageToolSteps } from '../helpers/engine-session.ts';
import { type SlackGitHubPatchbay, slackChannel, startSlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const API_KEY = 'test-anthropic-key';
const owner = 'octo-org';

/**
 * What the sandbox shows of its environment and of any file holding the real key, and what the relay
 * answers the run's token on an API no engine needs (the engine's first command).
 */
const PROBE =
  'env | sort; echo "--- files with the key:"; grep -rls "test-anthropic""-key" /workspace /tmp /opt /etc /run 2>/dev/null; echo "--- files API:"; curl -s --noproxy "*" -X POST -H "x-api-key: $ANTHROPIC_API_KEY" -H "anthropic-version: 2023-06-01" "$ANTHROPIC_BASE_URL/v1/files"; echo; echo "--- probe done"';

/** The text of every block of a request's messages, tool results included. */
const textOf = (body: AnthropicRequest) => JSON.stringify(body.messages);
const toolResults = (body: AnthropicRequest) => (textOf(body).match(/"type":"tool_result"/g) ?? []).length;
const CRITIQUE = 'An independent reviewer did not pass your change';

/**
 * The Claude Code engine end to end, through the composition configured from the environment only
 * (AGENT_ENGINE=claude-code; Slack in, GitHub out; the real `claude` CLI from npm in the bubblewrap
 * sandbox, its model traffic through Patchbay's relay to the loopback Anthropic fake). The fake
 * scripts the model's turns by the task's words, so the CLI makes real tool calls (Bash, Write).
 */
describe('Claude Code as the session engine, end to end', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let anthropic: FakeAnthropic;
  let upstream: RemoteFixture;
  let patchbay: SlackGitHubPatchbay;
  let app: Patchbay;
  let host: string;
  let hosted: string;
  const verifierCalls = new Map<string, number>();

  function engineTurn(body: AnthropicRequest): AnthropicReply {
    const text = textOf(body);
    const n = toolResults(body);
    if (text.includes('calls-case'))
      return {
        content: [1, 2, 3, 4].map((i) => ({
          type: 'tool_use' as const,
          name: 'Bash',
          input: { command: `echo call-${n}-${i}`, description: 'count' },
        })),
      };
    if (text.includes('tokens-case'))
      return {
        content: [{ type: 'tool_use', name: 'Bash', input: { command: 'echo tokens', description: 'spend' } }],
        outputTokens: 250_000,
      };
    if (text.includes('budget-case'))
      return {
        content: [{ type: 'tool_use', name: 'Bash', input: { command: 'echo spent', description: 'spend' } }],
        outputTokens: 1_000_000,
      };
    if (text.includes('stop-case'))
      return {
        content: [
          {
            type: 'tool_use',
            name: 'Bash',
            input: { command: 'sh -c "tail -f /dev/null" patchbay-stop-probe', description: 'wait' },
          },
        ],
      };
    if (text.includes('ask-case')) {
      if (!text.includes('NOTES.md please'))
        return {
          content: [{ type: 'text', text: 'Two names fit.\nQUESTION: Should the file be NOTES.md or notes.txt?' }],
        };
      if (n === 0)
        return {
          content: [
            { type: 'tool_use', name: 'Write', input: { file_path: '/workspace/NOTES.md', content: 'notes\n' } },
          ],
        };
      return { content: [{ type: 'text', text: 'Wrote NOTES.md as asked.' }] };
    }
    // pr-case: probe, write, finish; after the critique, one more command and finish.
    if (text.includes(CRITIQUE)) {
      if (n === 2)
        return {
          content: [
            {
              type: 'tool_use',
              name: 'Bash',
              input: { command: 'echo "- reworked" >> CHANGES.md', description: 'rework' },
            },
          ],
        };
      return { content: [{ type: 'text', text: 'Reworked CHANGES.md as the reviewer asked.' }] };
    }
    if (n === 0)
      return { content: [{ type: 'tool_use', name: 'Bash', input: { command: PROBE, description: 'probe' } }] };
    if (n === 1)
      return {
        content: [
          { type: 'tool_use', name: 'Write', input: { file_path: '/workspace/CHANGES.md', content: '# Changes\n' } },
        ],
      };
    return { content: [{ type: 'text', text: 'Added CHANGES.md.' }] };
  }

  /** The verifier (a forced record_verdict): fails the pr-case's first attempt once, passes everything else. */
  function verifierTurn(body: AnthropicRequest): AnthropicReply {
    const key = textOf(body).includes('pr-case') ? 'pr' : 'other';
    const n = (verifierCalls.get(key) ?? 0) + 1;
    verifierCalls.set(key, n);
    const v =
      key === 'pr' && n === 1
        ? verdict([2, 0, 1, 2], 'The changes file has no entry for this change.')
        : passingVerdict;
    return { content: [{ type: 'tool_use', name: 'record_verdict', input: v }] };
  }

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await upstream.pushCommit('README.md', '# web\n', 'init');
    hosted = (await github.addRepo(owner, 'web', upstream.remote, 77)).gitDir;
    anthropic = await startFakeAnthropic({
      apiKey: API_KEY,
      script: (body) =>
        (body as { tool_choice?: { type?: string } }).tool_choice?.type === 'tool'
          ? verifierTurn(body)
          : engineTurn(body),
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
        AGENT_ENGINE: 'claude-code',
        // A run's tokens: more than any case here uses, less than the tokens-case's one answer. The cost
        // budget stays above that answer's price (and below the budget-case's).
        RUN_MAX_TOKENS: '240000',
        RUN_MAX_COST_USD: '20',
        // A run's tool calls: more than any case here makes, fewer than the calls-case's two answers ask for.
        RUN_MAX_TOOL_CALLS: '6',
        MODEL_PROVIDER: 'anthropic',
        MODEL: 'claude-sonnet-4-6',
        ANTHROPIC_API_KEY: API_KEY,
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
      },
    });
    app = patchbay.app;
  }, 120_000);
  afterAll(async () => {
    await patchbay?.close();
    await anthropic?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  const { post, mention, threadText } = slackChannel({
    app: () => app,
    slack: () => slack,
    signingSecret: SIGNING_SECRET,
    channel: CHANNEL,
    user: 'U0ALICE01',
    repoUrl: () => `https://${host}/${owner}/web`,
  });

  it('a mention ends with a verified PR in the thread; the critique resumes the same Claude Code session and the rework lands on the same branch', {
    timeout: 300_000,
  }, async () => {
    const { session, threadTs } = await mention('pr-case: add a changes file to');
    const { done } = await expectPullRequestInThread({
      app,
      github,
      sessionId: session.id,
      repo: `${owner}/web`,
      threadText: () => threadText(threadTs),
      timeoutMs: 240_000,
    });
    expect(done.result?.summary).toContain('Engine: Claude Code');

    // The fake saw the real key on every call; the sandbox never did, in its environment or its files.
    const engineCalls = anthropic.calls.filter(
      (c) => textOf(c.body).includes('pr-case') && c.body.tools?.some((t) => t.name === 'Bash'),
    );
    expect(engineCalls.length).toBeGreaterThanOrEqual(5);
    for (const call of engineCalls) expect(call.headers['x-api-key']).toBe(API_KEY);
    const probe = /--- probe done/.test(textOf(engineCalls[1]!.body)) ? textOf(engineCalls[1]!.body) : '';
    expect(probe).toContain('ANTHROPIC_API_KEY=pbrelay-');
    expect(probe).toContain('ANTHROPIC_BASE_URL=http://127.0.0.1:3128/engine-relay');
    expect(probe).not.toContain(API_KEY);
    expect(probe).toMatch(/--- files with the key:\\n--- files API:/);
    // The agent's own call to an API no engine needs is refused by the relay, not forwarded.
    expect(probe).toContain('does not forward POST /v1/files for claude-code');

    // The critique went back into the same engine session: its request carries the first attempt's conversation.
    const rework = engineCalls.find((c) => textOf(c.body).includes(CRITIQUE))!;
    expect(textOf(rework.body)).toContain('Added CHANGES.md.');
    expect(textOf(rework.body)).toContain('--- probe done');
    const resumes = await engineResumes(app, session.id);
    expect(resumes).toHaveLength(2);
    expect(resumes[1]).toEqual(resumes[0]);

    // The gate holds the push until the verdict passes: one push of the branch, holding the first
    // attempt's commit and the rework's on top of it.
    const pushes = (await app.store.events(session.id, { types: ['branch-pushed'] })).map((e) => e.event);
    expect(pushes).toEqual([expect.objectContaining({ branch: done.branch })]);
    expect(await git(hosted, 'show', `${done.branch}:CHANGES.md`)).toBe('# Changes\n- reworked');
    const log = (await git(hosted, 'log', '--format=%s', `main..${done.branch}`)).split('\n');
    expect(log).toHaveLength(2);
    // Patchbay's instructions reached the engine's system prompt, through its file.
    expect(JSON.stringify(engineCalls[0]!.body.system)).toContain('You are Patchbay');
    const verdicts = (await app.store.events(session.id, { types: ['verification-finished'] })).map((e) => e.event);
    expect(verdicts.map((v) => (v.type === 'verification-finished' ? v.outcome : ''))).toEqual(['failed', 'passed']);

    // The page's events show the engine's commands and file changes, and usage with its cost.
    const steps = await pageToolSteps(app, session.id);
    expect(steps).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'Bash', input: expect.objectContaining({ command: PROBE }) }),
        expect.objectContaining({
          name: 'Write',
          input: expect.objectContaining({ file_path: '/workspace/CHANGES.md' }),
        }),
        expect.objectContaining({
          name: 'Bash',
          input: expect.objectContaining({ command: 'echo "- reworked" >> CHANGES.md' }),
        }),
      ]),
    );
    const engineUsage = await modelUsage(app, session.id, 'claude-sonnet-4-6');
    expect(engineUsage.length).toBeGreaterThanOrEqual(engineCalls.length);
    const stored = await app.store.get(session.id);
    expect(stored!.usage.inputTokens).toBeGreaterThan(0);
    expect(anthropic.rejections).toEqual([]);
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });

  it('"stop" during the engine\'s command ends the run within 10 seconds, its processes gone', {
    timeout: 240_000,
  }, async () => {
    const { session, threadTs } = await mention('stop-case: wait a while in');
    await waitFor(
      async () =>
        (await app.store.events(session.id, { types: ['tool-start'] })).some(
          (e) => e.event.type === 'tool-start' && e.event.name === 'Bash',
        ),
      'the engine running its command',
      180_000,
    );
    await waitFor(async () => pgrep('patchbay-stop-probe').length > 0, 'the command running in the sandbox', 30_000);
    const stoppedAt = Date.now();
    await post(message({ user: 'U0ALICE01', text: 'stop', threadTs }));
    const done = await waitForStatus(app, session.id, ['cancelled', 'failed', 'completed'], 30_000);
    expect(done.status).toBe('cancelled');
    await waitFor(async () => pgrep('patchbay-stop-probe').length === 0, 'the command gone', 10_000);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
  });

  it("the engine's question reaches the thread and the answer resumes its session", { timeout: 300_000 }, async () => {
    const { session, threadTs } = await mention('ask-case: add a notes file to');
    const waiting = await waitForStatus(app, session.id, ['waiting', 'failed', 'completed'], 180_000);
    expect(waiting.status).toBe('waiting');
    await waitFor(
      async () => threadText(threadTs).some((t) => t.includes('Should the file be NOTES.md or notes.txt?')),
      'the question in the thread',
      30_000,
    );
    await post(message({ user: 'U0ALICE01', text: 'NOTES.md please', threadTs }));
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 240_000);
    expect(done.status).toBe('completed');
    const answered = anthropic.calls.find((c) => textOf(c.body).includes('NOTES.md please'))!;
    // The same engine session: the answer follows the question in one conversation.
    expect(textOf(answered.body)).toContain('QUESTION: Should the file be NOTES.md or notes.txt?');
    expect(await git(hosted, 'show', `${done.branch}:NOTES.md`)).toBe('notes');
  });

  it('a budget smaller than the run uses stops the relay and pauses the run with the reason', {
    timeout: 240_000,
  }, async () => {
    const { session, threadTs } = await mention('budget-case: do something costly in');
    const paused = await waitForStatus(app, session.id, ['waiting', 'failed', 'completed'], 180_000);
    expect(paused.status).toBe('waiting');
    const reached = (await app.store.events(session.id, { types: ['budget-reached'] })).map((e) => e.event);
    expect(reached).toEqual([expect.objectContaining({ type: 'budget-reached', kind: 'cost' })]);
    // The relay forwarded the one call that spent the budget, then refused the next.
    expect(anthropic.calls.filter((c) => textOf(c.body).includes('budget-case')).length).toBe(1);
    await waitFor(
      async () => threadText(threadTs).some((t) => /budget/i.test(t)),
      'the budget pause in the thread',
      30_000,
    );
  });
  it("a tool-call limit smaller than the model's answers ask for stops the relay and ends the run with the reason", {
    timeout: 240_000,
  }, async () => {
    const { session, threadTs } = await mention('calls-case: run many commands in');
    const done = await waitForStatus(app, session.id, ['waiting', 'failed', 'completed'], 180_000);
    expect(done.status).toBe('failed');
    expect(done.error).toBe('the run made 8 tool calls, its limit');
    // Four calls an answer: the relay forwarded the two answers that reached the limit, then refused.
    expect(anthropic.calls.filter((c) => textOf(c.body).includes('calls-case')).length).toBe(2);
    await waitFor(
      async () => threadText(threadTs).some((t) => t.includes('the run made 8 tool calls, its limit')),
      'the reason in the thread',
      30_000,
    );
  });

  it('a token limit smaller than the run uses stops the relay and ends the run with the reason', {
    timeout: 240_000,
  }, async () => {
    const { session, threadTs } = await mention('tokens-case: do something long in');
    const done = await waitForStatus(app, session.id, ['waiting', 'failed', 'completed'], 180_000);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/^the run used \d+ tokens, over its limit of 240000$/);
    // The relay forwarded the one call that passed the limit, then refused the next.
    expect(anthropic.calls.filter((c) => textOf(c.body).includes('tokens-case')).length).toBe(1);
    await waitFor(
      async () => threadText(threadTs).some((t) => t.includes('over its limit of 240000')),
      'the reason in the thread',
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
