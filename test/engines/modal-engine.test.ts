import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnthropicReply,
  type AnthropicRequest,
  type FakeAnthropic,
  startFakeAnthropic,
} from '../fakes/fake-anthropic.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { startFakeModalForSdk } from '../fakes/modal/fake-modal-sdk.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { expectPullRequestInThread, modelUsage } from '../helpers/engine-session.ts';
import { type SlackGitHubPatchbay, slackChannel, startSlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const API_KEY = 'test-anthropic-key';
const owner = 'octo-org';
/** PUBLIC_URL: a name on the fake's "internet", bridged to Patchbay's loopback port once it listens. */
const PUBLIC_HOST = 'patchbay.test';
const PUBLIC_PORT = 8080;

/** The engine's first command in the Modal sandbox: its environment, any file holding the real key, where `claude` is, and the gate's managed files. */
const PROBE =
  'env | sort; echo "--- files with the key:"; grep -rls "test-anthropic""-key" /workspace /tmp /root /etc /run 2>/dev/null; echo "--- claude at: $(command -v claude)"; stat -c "%a %U %n" /etc/claude-code /etc/claude-code/*; echo "--- probe done"';
/** Refused by Patchbay's gate by default (publishing): writes a file first, so a run that got past the gate leaves it in the PR. */
const PUBLISH = 'echo ran >> published.txt; npm publish';

const textOf = (body: AnthropicRequest) => JSON.stringify(body.messages);
const toolResults = (body: AnthropicRequest) => (textOf(body).match(/"type":"tool_result"/g) ?? []).length;

/** Claude Code's turns: the probe, a publish the gate refuses, a file, the summary. The verifier (a forced record_verdict) passes. */
function turn(body: AnthropicRequest): AnthropicReply {
  if ((body as { tool_choice?: { type?: string } }).tool_choice?.type === 'tool')
    return { content: [{ type: 'tool_use', name: 'record_verdict', input: passingVerdict }] };
  const n = toolResults(body);
  if (n === 0)
    return { content: [{ type: 'tool_use', name: 'Bash', input: { command: PROBE, description: 'probe' } }] };
  if (n === 1)
    return { content: [{ type: 'tool_use', name: 'Bash', input: { command: PUBLISH, description: 'publish' } }] };
  if (n === 2)
    return {
      content: [
        { type: 'tool_use', name: 'Write', input: { file_path: '/workspace/CHANGES.md', content: '# Changes\n' } },
      ],
    };
  return { content: [{ type: 'text', text: 'Added CHANGES.md.' }] };
}

/**
 * An engine on Modal, end to end through the composition configured from the environment only
 * (SANDBOX=modal against the loopback fake Modal through the real `modal` SDK; AGENT_ENGINE=
 * claude-code; Slack in, GitHub out). The fake's image has the `claude` CLI only when the image's
 * Dockerfile commands install it from npm at the version it holds; its sandbox reaches Patchbay
 * only at PUBLIC_URL's host (its loopback is its own), and only when its network policy lets it out.
 */
describe('Claude Code on a Modal sandbox, end to end', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let anthropic: FakeAnthropic;
  let modal: Awaited<ReturnType<typeof startFakeModalForSdk>>;
  let upstream: RemoteFixture;
  let patchbay: SlackGitHubPatchbay;
  let host: string;
  let hosted: string;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await upstream.pushCommit('README.md', '# web\n', 'init');
    hosted = (await github.addRepo(owner, 'web', upstream.remote, 77)).gitDir;
    anthropic = await startFakeAnthropic({ apiKey: API_KEY, script: turn });
    modal = await startFakeModalForSdk();
    host = new URL(github.gitUrl).host;
    patchbay = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      turns: [],
      env: {
        ...modal.env(),
        PUBLIC_URL: `http://${PUBLIC_HOST}:${PUBLIC_PORT}`,
        SANDBOX_EGRESS_ALLOW: 'none',
        AGENT_ENGINE: 'claude-code',
        MODEL_PROVIDER: 'anthropic',
        MODEL: 'claude-sonnet-4-6',
        ANTHROPIC_API_KEY: API_KEY,
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
      },
    });
    await modal.fake.publish(PUBLIC_HOST, PUBLIC_PORT, {
      host: '127.0.0.1',
      port: Number(new URL(patchbay.app.url!).port),
    });
  }, 120_000);
  afterAll(async () => {
    await patchbay?.close();
    await modal?.close();
    await anthropic?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  const channel = slackChannel({
    app: () => patchbay.app,
    slack: () => slack,
    signingSecret: SIGNING_SECRET,
    channel: CHANNEL,
    user: 'U0ALICE01',
    repoUrl: () => `https://${host}/${owner}/web`,
  });

  it('a mention ends with a verified PR in the thread; the CLI came from the image, the relay from PUBLIC_URL, and the key never entered the sandbox', {
    timeout: 300_000,
  }, async () => {
    const { app } = patchbay;
    const { session, threadTs } = await channel.mention('add a changes file to');
    const { done } = await expectPullRequestInThread({
      app,
      github,
      sessionId: session.id,
      repo: `${owner}/web`,
      threadText: () => channel.threadText(threadTs),
      timeoutMs: 240_000,
    });
    expect(done.result?.summary).toContain('Engine: Claude Code');
    expect(await git(hosted, 'show', `${done.branch}:CHANGES.md`)).toBe('# Changes');

    // The engine ran in a Modal sandbox made from an image whose build installs the pinned CLI,
    // with a network policy that lets out PUBLIC_URL's host and nothing else.
    const sandboxes = [...modal.fake.sandboxes.values()].filter((sb) =>
      sb.tags.some((t) => t.tagName === 'patchbay-session' && t.tagValue === session.id),
    );
    expect(sandboxes.length).toBeGreaterThanOrEqual(1);
    expect(sandboxes[0]!.definition.networkAccess).toMatchObject({ allowedDomains: [PUBLIC_HOST], allowedCidrs: [] });
    const builds = [...modal.fake.images.values()].flatMap((i) => (i.kind === 'registry' ? i.dockerfileCommands : []));
    expect(builds.filter((c) => /^RUN npm install -g .*@anthropic-ai\/claude-code@2\.1\.332\b/.test(c))).toHaveLength(
      1,
    );

    // The fake saw the real key on every call; the sandbox never did, in its environment or its files.
    const engineCalls = anthropic.calls.filter((c) => c.body.tools?.some((t) => t.name === 'Bash'));
    expect(engineCalls.length).toBeGreaterThanOrEqual(3);
    for (const call of engineCalls) expect(call.headers['x-api-key']).toBe(API_KEY);
    const probe = textOf(engineCalls[1]!.body);
    expect(probe).toContain('--- probe done');
    expect(probe).toContain('ANTHROPIC_API_KEY=pbrelay-');
    expect(probe).toContain(`ANTHROPIC_BASE_URL=http://${PUBLIC_HOST}:${PUBLIC_PORT}/engine-relay`);
    expect(probe).toContain('--- claude at: /usr/local/bin/claude');
    expect(probe).not.toContain(API_KEY);
    expect(probe).toMatch(/--- files with the key:\\n--- claude at/);
    // The image's build wrote the gate's managed files as it made them: root's, read-only by mode.
    for (const line of [
      '555 root /etc/claude-code',
      '444 root /etc/claude-code/managed-settings.json',
      '444 root /etc/claude-code/patchbay-gate.mjs',
    ])
      expect(probe).toContain(line);

    // The hook in the image asked the gate at PUBLIC_URL/engine-relay/gate: npm publish was refused, and did not run.
    expect(textOf(engineCalls[2]!.body)).toMatch(/Command refused: [^"]*publish/);
    expect(await git(hosted, 'ls-tree', '--name-only', done.branch!)).not.toContain('published.txt');

    // The relay metered the engine's calls into the session.
    expect((await modelUsage(app, session.id, 'claude-sonnet-4-6')).length).toBeGreaterThanOrEqual(engineCalls.length);
    // At PUBLIC_URL the relay answers only an open run's token: this run's was revoked when it ended.
    const late = await fetch(`${app.url}/engine-relay/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': probe.match(/ANTHROPIC_API_KEY=(pbrelay-[\w-]+)/)![1]!,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(late.status).toBe(401);
    expect(await late.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(modal.fake.refusals).toEqual([]);
    expect(anthropic.rejections).toEqual([]);
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });
});
