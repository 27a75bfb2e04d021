import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSignInCommand, type SignInCommand } from '../../src/cli/codex-signin-cli.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { type FakeOpenAI, type OpenAIReply, type OpenAIRequestBody, startFakeOpenAI } from '../fakes/fake-openai.ts';
import { type AuthDotJson, type FakeOpenAIAuth, startFakeOpenAIAuth } from '../fakes/fake-openai-auth.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { expectPullRequestInThread, modelUsage } from '../helpers/engine-session.ts';
import { type SlackGitHubPatchbay, slackChannel, startSlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';
import { textSink } from '../helpers/text-sink.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const API_KEY = 'test-openai-key';
const MODEL = 'gpt-5.5';
const owner = 'octo-org';
const ada = { accountId: 'acct-ada-0001', email: 'ada@example.com' };
/** Every JWT the fake issues starts with this header: no file in the sandbox may hold one. */
const JWT_HEAD = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url');
const PROBE = `env | sort; echo "--- files with a token:"; grep -rls "${JWT_HEAD.slice(0, 12)}""${JWT_HEAD.slice(12)}" /workspace /tmp /opt /etc /run 2>/dev/null; echo "--- probe done"`;

/**
 * Codex with a ChatGPT sign-in (CODEX_AUTH=chatgpt), end to end through the composition configured
 * from the environment only: the operator imports the auth.json `codex login` wrote (`patchbay
 * engines codex-import`), Patchbay keeps it sealed in the database and its relay forwards Codex's
 * Responses calls to the loopback ChatGPT backend with the access token and account id, refreshing
 * the token at the loopback auth.openai.com. The verifier (Patchbay's own model) uses the API key at
 * the OpenAI API fake: only the engine's traffic goes through the sign-in.
 */
describe('Codex with a ChatGPT sign-in', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let api: FakeOpenAI;
  let backend: FakeOpenAI;
  let auth: FakeOpenAIAuth;
  let upstream: RemoteFixture;
  let patchbay: SlackGitHubPatchbay;
  let host: string;
  let hosted: string;
  let files: string;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await upstream.pushCommit('README.md', '# web\n', 'init');
    hosted = (await github.addRepo(owner, 'web', upstream.remote, 77)).gitDir;
    auth = await startFakeOpenAIAuth({ accessSeconds: 3600 });
    api = await startFakeOpenAI({
      apiKey: API_KEY,
      responses: () => ({ toolCalls: [{ name: 'record_verdict', arguments: passingVerdict }] }),
    });
    backend = await startFakeOpenAI({
      pathPrefix: '/backend-api/codex',
      authorize: (headers) => auth.authorize(headers),
      responses: engineTurn,
    });
    host = new URL(github.gitUrl).host;
    files = await mkdtemp(join(tmpdir(), 'patchbay-codex-auth-'));
    patchbay = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      turns: [],
      env: {
        SANDBOX_EGRESS_ALLOW: 'none',
        AGENT_ENGINE: 'codex',
        CODEX_AUTH: 'chatgpt',
        CHATGPT_BASE_URL: backend.baseUrl,
        OPENAI_AUTH_URL: auth.url,
        PATCHBAY_SECRET_KEY: 'an-encryption-key-of-at-least-32-chars!!',
        MODEL_PROVIDER: 'openai',
        MODEL,
        OPENAI_API_KEY: API_KEY,
        OPENAI_BASE_URL: api.baseUrl,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await patchbay?.close();
    for (const fake of [api, backend, auth, github, slack]) await fake?.close();
    await upstream?.cleanup();
    await rm(files, { recursive: true, force: true });
  });

  const signInCommand = async (command: SignInCommand) => {
    const out = textSink();
    const config = patchbay.app.config;
    const code = await runSignInCommand(command, { config, log: pino({ level: 'silent' }), out: out.stream });
    return { code, out: out.text() };
  };
  const importSignIn = async (authJson: AuthDotJson) => {
    const file = join(files, `auth-${Date.now()}.json`);
    await writeFile(file, JSON.stringify(authJson));
    return signInCommand({ action: 'codex-import', file });
  };
  const { mention, threadText } = slackChannel({
    app: () => patchbay.app,
    slack: () => slack,
    signingSecret: SIGNING_SECRET,
    channel: CHANNEL,
    user: 'U0ALICE01',
    repoUrl: () => `https://${host}/${owner}/web`,
  });

  it('an expired access token is refreshed once, and the run ends in a verified PR; the sandbox never sees a token', {
    timeout: 360_000,
  }, async () => {
    const signIn = auth.signIn(ada, -60);
    const imported = await importSignIn(signIn);
    expect(imported).toEqual({ code: 0, out: expect.stringContaining('acct-ada-0001') });
    const stored = await patchbay.app.database.db.selectFrom('codex_signins').selectAll().executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(signIn.tokens.refresh_token);
    expect(JSON.stringify(stored)).not.toContain(signIn.tokens.access_token);

    const { session, threadTs } = await mention('pr-case: add a changes file to');
    const { done } = await expectPullRequestInThread({
      app: patchbay.app,
      github,
      sessionId: session.id,
      repo: `${owner}/web`,
      threadText: () => threadText(threadTs),
      timeoutMs: 300_000,
    });
    expect(await git(hosted, 'show', `${done.branch}:CHANGES.md`)).toBe('# Changes');
    const verdicts = (await patchbay.app.store.events(session.id, { types: ['verification-finished'] })).map(
      (e) => e.event,
    );
    expect(verdicts).toEqual([expect.objectContaining({ outcome: 'passed' })]);

    // One refresh, before the first call: the backend never saw the expired token.
    expect(auth.grants).toEqual([{ status: 200, refreshToken: signIn.tokens.refresh_token }]);
    expect(auth.refused).toEqual([]);
    expect(backend.rejections).toEqual([]);
    const calls = backend.calls.filter((c) => JSON.stringify(c.body.input).includes('pr-case'));
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const call of calls) {
      expect(call.headers['chatgpt-account-id']).toBe(ada.accountId);
      expect(call.headers.authorization).toMatch(/^Bearer ey/);
      expect(call.headers.authorization).not.toBe(`Bearer ${signIn.tokens.access_token}`);
    }
    // The sandbox held only the relay's token, in its environment and its files.
    const probe = calls.map((c) => JSON.stringify(c.body.input)).find((t) => t.includes('--- probe done')) ?? '';
    expect(probe).toContain('PATCHBAY_RELAY_TOKEN=pbrelay-');
    expect(probe).not.toContain(JWT_HEAD);
    expect(probe).not.toContain(signIn.tokens.refresh_token);
    expect(probe).toMatch(/--- files with a token:\\n--- probe done/);
    // Metered as with an API key.
    expect((await modelUsage(patchbay.app, session.id, MODEL)).length).toBeGreaterThanOrEqual(calls.length);
  });

  it('a sign-in OpenAI refuses to refresh fails the run with the reason; one signed out fails saying to sign in', {
    timeout: 300_000,
  }, async () => {
    const signIn = auth.signIn(ada, -60);
    await importSignIn(signIn);
    auth.revoke(signIn.tokens.refresh_token);
    const refused = await mention('refused-case: add a file to');
    const failed = await waitForStatus(patchbay.app, refused.session.id, ['completed', 'failed', 'waiting'], 240_000);
    expect(failed.status).not.toBe('completed');
    await waitFor(
      async () =>
        threadText(refused.threadTs).some(
          (t) => t.includes('its refresh token was revoked') && t.includes('codex-import'),
        ),
      'the refusal in the thread',
      60_000,
    );
    expect(auth.refused).toEqual(['token endpoint: refresh_token_invalidated']);
    expect((await signInCommand({ action: 'codex-status' })).out).toContain('no longer works');

    expect(await signInCommand({ action: 'codex-logout' })).toEqual({
      code: 0,
      out: 'Deleted the ChatGPT sign-in for Codex.\n',
    });
    const before = backend.calls.length;
    const out = await mention('logout-case: add a file to');
    const ended = await waitForStatus(patchbay.app, out.session.id, ['completed', 'failed', 'waiting'], 240_000);
    expect(ended.status).not.toBe('completed');
    await waitFor(
      async () => threadText(out.threadTs).some((t) => t.includes('Codex has no ChatGPT sign-in on this Patchbay')),
      'the missing sign-in in the thread',
      60_000,
    );
    expect(backend.calls.length).toBe(before);
    expect(auth.grants.filter((g) => g.status === 200)).toHaveLength(1);
  });
});

type Item = Record<string, unknown> & { type?: string };

/** The engine's turns: probe the sandbox, add CHANGES.md, finish (Codex's exec_command and apply_patch). */
function engineTurn(body: OpenAIRequestBody): OpenAIReply {
  if (!body.tools) return { text: 'Patchbay session' };
  const input = Array.isArray(body.input) ? (body.input as Item[]) : [];
  const n = input.filter((i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output').length;
  if (n === 0) return { toolCalls: [{ name: 'exec_command', arguments: { cmd: PROBE, yield_time_ms: 30_000 } }] };
  if (n === 1) {
    const patch = '*** Begin Patch\n*** Add File: CHANGES.md\n+# Changes\n*** End Patch\n';
    return { toolCalls: [{ name: 'apply_patch', arguments: patch, custom: true }] };
  }
  return { text: 'Added CHANGES.md.' };
}
