import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineResume } from '../../src/engines/engine.ts';
import type { Patchbay } from '../../src/main.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { engineTurn, inputText, isVerifier, toolNames, verifierTurn } from '../helpers/openai-engine-turns.ts';
import { type SlackGitHubPatchbay, slackChannel, startSlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const API_KEY = 'test-openai-key';
const owner = 'octo-org';

/**
 * The repository's knowledge document chooses the engine, through the composition configured from
 * the environment only with AGENT_ENGINE unset (Patchbay's own loop by default; Slack in, GitHub
 * out; OPENAI_API_KEY and OPENAI_BASE_URL at the loopback Responses fake). A person sets
 * `engine: codex` on the document (the page's Repo tab, `PUT /api/repos/:repo/knowledge`): the
 * next mention runs the real Codex CLI in the sandbox and ends with its PR; a request's own words
 * ("with patchbay:") win over the document.
 */
describe("the repository document's engine, end to end", () => {
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
    host = new URL(github.gitUrl).host;
    openai = await startFakeOpenAI({
      apiKey: API_KEY,
      responses: (body) => (isVerifier(body) ? verifierTurn(body, verifierCalls) : engineTurn(body)),
    });
    patchbay = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      turns: [],
      env: {
        MODEL_PROVIDER: 'openai',
        MODEL: 'gpt-5.5',
        OPENAI_API_KEY: API_KEY,
        OPENAI_BASE_URL: openai.baseUrl,
        SANDBOX_EGRESS_ALLOW: 'none',
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
  /** Mentions Patchbay with a task on the repository and waits for its session to end or ask. */
  const mention = async (words: string) => {
    const { session } = await channel.mention(words);
    return waitForStatus(app, session.id, ['completed', 'failed', 'cancelled', 'waiting'], 300_000);
  };
  /** The engine sessions a session's transcript resumes (none when Patchbay's own loop ran it). */
  const engineOf = async (sessionId: string) =>
    (await app.store.transcript(sessionId)).flatMap((e) => {
      const resume = EngineResume.safeParse(e.message.role === 'assistant' ? e.message.providerState : undefined);
      return resume.success ? [resume.data] : [];
    });

  it('engine: codex on the document runs Codex with AGENT_ENGINE unset; the request\'s "with patchbay:" wins over it', {
    timeout: 600_000,
  }, async () => {
    // The repository's first session builds its document, on Patchbay's own loop (the default).
    const first = await mention('look-case: tell me what to change in');
    expect(first.status).toBe('completed');
    expect(await engineOf(first.id)).toEqual([]);
    const url = `${app.url}/api/repos/${encodeURIComponent(first.repo!)}/knowledge`;
    const stored = (await (await fetch(url)).json()) as { document: Record<string, unknown> };
    const edit = await fetch(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ document: { ...stored.document, engine: 'codex' }, author: { name: 'Alice Doe' } }),
    });
    expect(edit.status).toBe(200);

    const chosen = await mention('doc-case: add a doc file to');
    expect(chosen.error).toBeNull();
    expect(chosen.status).toBe('completed');
    expect(chosen.result?.summary).toContain('Engine: Codex');
    expect(await engineOf(chosen.id)).toEqual([expect.objectContaining({ engine: 'codex' })]);
    const codexCalls = openai.calls.filter(
      (c) => inputText(c.body).includes('doc-case') && toolNames(c.body).includes('exec_command'),
    );
    expect(codexCalls.length).toBeGreaterThanOrEqual(2);
    const pull = github.pulls.find((p) => p.head === chosen.branch)!;
    expect(chosen.result?.prUrl).toBe(`${github.gitUrl}/${owner}/web/pull/${pull.number}`);
    expect(await git(hosted, 'show', `${chosen.branch}:DOC.md`)).toBe('doc');

    const overridden = await mention('with patchbay: doc-case: add a doc file to');
    expect(overridden.status).toBe('completed');
    expect(overridden.result?.summary).not.toContain('Engine:');
    expect(await engineOf(overridden.id)).toEqual([]);
    const own = openai.calls.filter((c) => inputText(c.body).includes('with patchbay: doc-case'));
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((c) => toolNames(c.body).includes('run_shell'))).toBe(true);
    expect(openai.rejections).toEqual([]);
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });
});
