import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { agentSessionStopped, appMention, envelope, message, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { passingVerdict, scriptedVerifier } from '../helpers/scripted-verifier.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';
const ALICE = 'U0ALICE01';

type Rig = {
  app: Patchbay;
  slack: FakeSlackApi;
  github: FakeGitHub;
  repoUrl: string;
  setScenario(decide: (messages: readonly ModelMessage[]) => ScriptedTurn): void;
  modelCalls(): number;
  postEvent(event: Record<string, unknown>): Promise<Response>;
  session(threadTs: string): ReturnType<Patchbay['store']['findByThread']>;
  close(): Promise<void>;
};

/**
 * Patchbay configured from the environment alone (loadConfig → startPatchbay → buildIntegrations,
 * as `patchbay serve` does) against the fake Slack and a fake GitHub; only the agent's model is a
 * scripted one, so each test says what the agent does.
 */
async function startRig(options: { agentSurface: boolean }): Promise<Rig> {
  const github = await startFakeGitHub();
  const slack = await startFakeSlackApi({
    botToken: BOT_TOKEN,
    users: [{ id: ALICE, name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
  });
  slack.agent.state.available = options.agentSurface;
  const upstream: RemoteFixture = await createRemote();
  await github.addRepo(owner, 'shop', upstream.remote, 77);
  const database = await createTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'patchbay-agent-surface-'));
  let decide: (messages: readonly ModelMessage[]) => ScriptedTurn = () => ({ text: 'nothing to do' });
  let calls = 0;
  const model = createScriptedProvider({
    scenario: (messages) => {
      calls += 1;
      return decide(messages);
    },
  });
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    DATABASE_URL: database.url,
    PORT: '0',
    PUBLIC_URL: 'http://patchbay.test',
    LOG_LEVEL: 'silent',
    SANDBOX_EGRESS_ALLOW: 'none',
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: slack.apiUrl,
    GITHUB_APP_ID: String(github.appId),
    GITHUB_APP_PRIVATE_KEY: github.privateKey,
    GITHUB_WEBHOOK_SECRET: 'agent-surface-webhook-secret',
    GITHUB_API_URL: github.apiUrl,
    GITHUB_GIT_URL: github.gitUrl,
  });
  const app = await startPatchbay(config, {
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    serve: true,
    work: true,
    model,
    verifierModel: scriptedVerifier(passingVerdict, passingVerdict, passingVerdict),
    queue: { pollingIntervalSeconds: 0.5 },
    integrations: (context) => buildIntegrations(config, context),
  });
  return {
    app,
    slack,
    github,
    repoUrl: `https://${new URL(github.gitUrl).host}/${owner}/shop`,
    setScenario: (next) => {
      decide = next;
    },
    modelCalls: () => calls,
    postEvent(event) {
      const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(event)));
      return fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body });
    },
    session: (threadTs) => app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs }),
    async close() {
      await app.close();
      await database.close();
      await github.close();
      await slack.close();
      await upstream.cleanup();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const turns = (messages: readonly ModelMessage[]) => messages.filter((m) => m.role === 'assistant').length;

/** The agent says what it does, writes a file, and says it is done. */
const writesAFile = (messages: readonly ModelMessage[]): ScriptedTurn =>
  turns(messages) === 0
    ? {
        text: 'Looking at the checkout code first.',
        toolCalls: [{ name: 'write_file', input: { path: 'CHANGES.md', content: 'changed\n' } }],
      }
    : { text: 'Added CHANGES.md with the change.' };

describe("Slack's agent surface (a workspace that has it)", () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ agentSurface: true });
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
  });

  it("a mention streams its reply: processing from the first reply, the agent's words and then the pull request streamed, active at the end", {
    timeout: 150_000,
  }, async () => {
    rig.setScenario(writesAFile);
    const mention = appMention({ user: ALICE, text: `add a changes file to <${rig.repoUrl}>` });
    expect((await rig.postEvent(mention)).status).toBe(200);
    const session = await waitFor(() => rig.session(mention.ts), 'the session');
    const done = await waitForStatus(rig.app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(done.status).toBe('completed');
    const pr = done.result?.prUrl;
    expect(pr).toBeTruthy();
    const streams = () => rig.slack.agent.streams.filter((s) => s.threadTs === mention.ts);
    await waitFor(
      async () => streams().some((s) => s.text.includes(pr!) && s.state === 'stopped'),
      'the streamed reply',
    );
    // The agent's words reached the thread through a stream, to the person who asked; the final
    // reply is a stream of its own after it, so it notifies like a message.
    const [words, final] = streams();
    expect(words!.text).toContain('Looking at the checkout code first.');
    expect(words!.state).toBe('stopped');
    expect(final!.text).toMatch(/^:white_check_mark: Pull request: /);
    expect(final!.text).toContain(pr);
    expect(final!.text).toContain('Added CHANGES.md with the change.');
    expect(rig.slack.calls.find((c) => c.method === 'chat.startStream')?.args).toMatchObject({
      recipient_user_id: ALICE,
      recipient_team_id: TEAM,
      thread_ts: mention.ts,
    });
    // The final reply was not posted a second time as a plain message.
    expect(rig.slack.thread(CHANNEL, mention.ts).filter((m) => m.text.includes(pr!))).toHaveLength(1);
    const statuses = rig.slack.agent.statusesOf(CHANNEL, mention.ts);
    expect(statuses[0]).toBe('processing');
    expect(statuses.at(-1)).toBe('active');
    // The status line said what the run was doing; the status message leaves Stop to Slack's own button.
    expect(rig.slack.agent.lines.some((l) => l.threadTs === mention.ts)).toBe(true);
    const statusMessage = rig.slack.thread(CHANNEL, mention.ts)[0]!;
    expect(JSON.stringify(statusMessage.blocks)).not.toContain('patchbay_stop');
    expect(rig.slack.refused).toEqual([]);
  });

  it("Slack's native Stop, pressed as soon as it shows, cancels a run that has not started, within 10 s", {
    timeout: 60_000,
  }, async () => {
    rig.setScenario(() => ({ toolCalls: [{ name: 'run_shell', input: { command: 'sleep 30' } }] }));
    const before = rig.modelCalls();
    const mention = appMention({ user: ALICE, text: `add a changes file to <${rig.repoUrl}>` });
    expect((await rig.postEvent(mention)).status).toBe(200);
    // The button shows once the thread's agent session is processing: pressed then.
    await waitFor(
      async () => rig.slack.agent.statusesOf(CHANNEL, mention.ts).includes('processing'),
      'the processing status',
      10_000,
    );
    const session = await waitFor(() => rig.session(mention.ts), 'the session');
    const ready = await rig.app.store.events(session.id, { types: ['workspace-ready'] });
    expect(ready).toEqual([]);
    const pressed = Date.now();
    expect((await rig.postEvent(agentSessionStopped({ user: ALICE, threadTs: mention.ts }))).status).toBe(200);
    const stopped = await waitForStatus(rig.app, session.id, ['completed', 'failed', 'cancelled'], 10_000);
    expect(stopped.status).toBe('cancelled');
    expect(Date.now() - pressed).toBeLessThan(10_000);
    expect(rig.modelCalls()).toBe(before);
    // The thread hears that it stopped, and its agent session leaves processing.
    await waitFor(
      async () => rig.slack.agent.streams.find((s) => s.threadTs === mention.ts && s.text.includes('Stopped')),
      'the stop said in the thread',
    );
    await waitFor(async () => rig.slack.agent.statusesOf(CHANNEL, mention.ts).at(-1) === 'active', 'active again');
    expect(rig.slack.refused).toEqual([]);
  });

  it('a question shows the suspended state until it is answered', { timeout: 150_000 }, async () => {
    rig.setScenario((messages) => {
      const turn = turns(messages);
      if (turn === 0)
        return {
          toolCalls: [{ name: 'ask_user', input: { question: 'Which file?', choices: ['NOTES.md', 'CHANGES.md'] } }],
        };
      if (turn === 1) return { toolCalls: [{ name: 'write_file', input: { path: 'NOTES.md', content: 'n\n' } }] };
      return { text: 'Added NOTES.md.' };
    });
    const mention = appMention({ user: ALICE, text: `add a notes file to <${rig.repoUrl}>` });
    expect((await rig.postEvent(mention)).status).toBe(200);
    const session = await waitFor(() => rig.session(mention.ts), 'the session');
    await waitForStatus(rig.app, session.id, ['waiting'], 60_000);
    await waitFor(
      async () => rig.slack.agent.statusesOf(CHANNEL, mention.ts).at(-1) === 'suspended',
      'the suspended status',
    );
    expect((await rig.postEvent(message({ user: ALICE, text: 'NOTES.md', threadTs: mention.ts }))).status).toBe(200);
    const done = await waitForStatus(rig.app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(done.status).toBe('completed');
    await waitFor(async () => rig.slack.agent.statusesOf(CHANNEL, mention.ts).at(-1) === 'active', 'active at the end');
    const statuses = rig.slack.agent.statusesOf(CHANNEL, mention.ts);
    expect(statuses.slice(statuses.indexOf('suspended'))).toContain('processing');
    expect(rig.slack.refused).toEqual([]);
  });
});

describe("Slack without the agent surface (today's flow)", () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ agentSurface: false });
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
  });

  it('keeps the status message with its Stop button and posts the pull request as a message', {
    timeout: 150_000,
  }, async () => {
    rig.setScenario(writesAFile);
    const mention = appMention({ user: ALICE, text: `add a changes file to <${rig.repoUrl}>` });
    expect((await rig.postEvent(mention)).status).toBe(200);
    const session = await waitFor(() => rig.session(mention.ts), 'the session');
    const done = await waitForStatus(rig.app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(done.status).toBe('completed');
    const pr = done.result!.prUrl!;
    await waitFor(
      async () => rig.slack.thread(CHANNEL, mention.ts).find((m) => m.text.includes(pr)),
      'the pull request posted',
    );
    expect(rig.slack.agent.streams).toEqual([]);
    const statusMessage = rig.slack.thread(CHANNEL, mention.ts)[0]!;
    expect(rig.slack.calls.find((c) => c.method === 'chat.postMessage')?.args.blocks).toContain('patchbay_stop');
    expect(statusMessage.text).toContain('Done');
    // Slack said once that it has no such method; Patchbay did not ask again.
    expect(rig.slack.refused).toEqual([{ method: 'agents.sessions.setStatus', error: 'unknown_method' }]);
  });
});
