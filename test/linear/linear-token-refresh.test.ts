import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../integrations/github/secret-box.ts';
import { createLinearApi } from '../../integrations/linear/linear-api.ts';
import { createLinearStore } from '../../integrations/linear/linear-store.ts';
import { createLinearTokens, linearClientsFor, type RefreshFailure } from '../../integrations/linear/linear-tokens.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { installationCreatedEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook, type LinearUser } from '../fakes/linear/fake-linear-webhooks.ts';
import { githubSecret, linearSecret, startLinearPatchbay, type LinearPatchbay } from './linear-fixture.ts';

/** Access tokens live 12 s here (Linear: about a day), so a session outlives several of them. */
const lifetimeSeconds = 12;
const secretKey = 'an-encryption-key-of-at-least-32-chars!!';
const owner = 'octo-org';
const repo = 'demo';
const ada: LinearUser = { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' };

/** SLOW: one step past a token's life. STEPS: many short steps, a call to Linear every second or two. */
function decide(messages: readonly ModelMessage[]): ScriptedTurn {
  const task = messages
    .filter((m) => m.role === 'user')
    .map((m) => String(m.content))
    .join('\n');
  const turn = messages.filter((m) => m.role === 'assistant').length;
  if (task.includes('SLOW')) {
    return (
      [
        { toolCalls: [{ name: 'run_shell', input: { command: `sleep ${lifetimeSeconds + 4}` } }] },
        { toolCalls: [{ name: 'write_file', input: { path: 'slow.txt', content: 'done\n' } }] },
      ][turn] ?? { text: 'Finished the slow task.' }
    );
  }
  if (task.includes('STEPS'))
    return turn < 14
      ? { toolCalls: [{ name: 'run_shell', input: { command: `sleep 1; echo step ${turn}` } }] }
      : { text: 'All steps done.' };
  return { text: 'Nothing to do.' };
}

/**
 * Linear as OAuth apps meet it since October 2025: the install gives an access token that expires
 * and a refresh token that is spent by its use. Real Patchbay (environment-only configuration,
 * installed through its own OAuth flow) against the fake Linear, which refuses expired tokens with
 * Linear's 401 and rotates refresh tokens.
 */
describe('Linear access tokens that expire', () => {
  let linear: FakeLinear;
  let github: FakeGitHub;
  let upstream: RemoteFixture;
  let app: LinearPatchbay;
  const model = createScriptedProvider({ scenario: decide });
  const hook = () => `${app.url}/linear/webhooks`;
  const repoUrl = () => `${github.gitUrl}/${owner}/${repo}`;
  const refreshes = () => linear.grants.filter((g) => g.grantType === 'refresh_token').length;

  beforeAll(async () => {
    linear = await startFakeLinear({ tokenLifetimeSeconds: lifetimeSeconds });
    linear.addTeam({
      id: 'team-eng',
      key: 'ENG',
      name: 'Engineering',
      states: [
        { id: 'st-todo', name: 'Todo', type: 'unstarted', position: 0 },
        { id: 'st-doing', name: 'Doing', type: 'started', position: 1 },
      ],
    });
    github = await startFakeGitHub();
    upstream = await createRemote();
    await github.addRepo(owner, repo, upstream.remote, 91, { alice: 'write' });
    app = await startLinearPatchbay({ linear, github }, model, {
      LINEAR_ACCESS_TOKEN: '',
      LINEAR_CLIENT_ID: linear.oauth.clientId,
      LINEAR_CLIENT_SECRET: linear.oauth.clientSecret,
      PATCHBAY_SECRET_KEY: secretKey,
    });
    const installed = installationCreatedEvent(91, owner, [{ id: 501, full_name: `${owner}/${repo}` }]);
    expect((await sendWebhook(`${app.url}/github/webhooks`, githubSecret, 'installation', installed)).status).toBe(202);
    // A workspace admin installs the app: Linear's consent page, then the callback with the code.
    const start = await fetch(`${app.url}/linear/oauth/start`, { redirect: 'manual' });
    const back = new URL(linear.authorize(start.headers.get('location')!).redirect);
    // In the browser that started it: the install is bound to its cookie.
    const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect((await fetch(`${app.url}/linear/oauth/callback${back.search}`, { headers: { cookie } })).status).toBe(200);
  }, 90_000);
  afterAll(async () => {
    await app?.dispose();
    await linear?.close();
    await github?.close();
    await upstream?.cleanup();
  });

  const delegate = async (agentSessionId: string, identifier: string, title: string) => {
    const issue = linear.addIssue({
      id: `issue-${identifier.toLowerCase()}`,
      identifier,
      title,
      description: `Code: ${repoUrl()}`,
      teamId: 'team-eng',
      stateId: 'st-todo',
    });
    expect(
      (
        await sendLinearWebhook(
          hook(),
          linearSecret,
          agentSessionCreated(linear, { agentSessionId, issue, creator: ada }),
        )
      ).status,
    ).toBe(200);
    return waitFor(
      () => app.store.findByThread({ source: 'linear', agentSessionId, issueId: issue.id }),
      'the session',
    );
  };

  it("a session that runs past its access token's expiry keeps reporting: the token is refreshed before it expires", async () => {
    const session = await delegate('as-slow', 'ENG-1', 'SLOW work');
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 120_000);
    expect(done.status).toBe('completed');
    const response = await linear.waitFor(
      () => linear.activitiesOf('as-slow').find((a) => a.content.type === 'response'),
      'the response',
      60_000,
    );
    expect(response.content.body).toContain('Finished the slow task.');
    // The run outlived the install's token; Patchbay renewed it ahead of time, so Linear refused
    // nothing (no 401, no spent refresh token presented again).
    expect(refreshes()).toBeGreaterThanOrEqual(1);
    expect(linear.refused).toEqual([]);
    const row = await app.database.db.selectFrom('linear_installations').selectAll().executeTakeFirstOrThrow();
    for (const secret of linear.secretsIssued) {
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(app.logLines.join('\n')).not.toContain(secret);
    }
  }, 180_000);

  it('one refresh per workspace under concurrent 401s, across two processes on one database', async () => {
    // Two more "processes": their own token holders and API clients, on Patchbay's database.
    const failures: RefreshFailure[] = [];
    const startProcess = () => {
      const tokens = createLinearTokens({
        store: createLinearStore(app.database.db),
        box: createSecretBox(secretKey),
        endpoint: {
          tokenUrl: new URL('/oauth/token', linear.apiUrl).toString(),
          clientId: linear.oauth.clientId,
          clientSecret: linear.oauth.clientSecret,
        },
        log: pino({ level: 'silent' }),
        onRefreshFailed: async (failure) => void failures.push(failure),
      });
      return createLinearApi({
        client: linearClientsFor(tokens, linear.organizationId, linear.apiUrl),
        log: pino({ level: 'silent' }),
        sleep: async () => undefined,
      });
    };
    const [first, second] = [startProcess(), startProcess()];
    expect(await first.viewerId()).toBe(linear.appUserId);
    expect(await second.viewerId()).toBe(linear.appUserId);
    // The token dies early as far as Linear is concerned (revoked, or the clocks disagree): every
    // call is refused at once, and both processes hear 401s together.
    const before = refreshes();
    linear.refused.length = 0;
    linear.advance((lifetimeSeconds + 1) * 1000);
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => first.viewerId()),
      ...Array.from({ length: 5 }, () => second.viewerId()),
    ]);
    expect(answers).toEqual(Array.from({ length: 10 }, () => linear.appUserId));
    expect(refreshes() - before).toBe(1);
    expect(failures).toEqual([]);
    // What Linear refused: the calls made with the dead token, each once, and nothing else.
    expect(new Set(linear.refused.map((r) => `${r.operation} ${r.status}`))).toEqual(new Set(['auth 401']));
    expect(linear.refused.length).toBeLessThanOrEqual(10);
    linear.refused.length = 0;
  }, 60_000);

  it('a refresh Linear refuses tells the open session in its thread, and the log, to install again', async () => {
    // An admin removed the app in Linear: its refresh tokens stop working; the access token has its last seconds.
    linear.revokeRefreshTokens();
    const session = await delegate('as-steps', 'ENG-2', 'STEPS to take');
    const told = await linear.waitFor(
      () =>
        linear
          .activitiesOf('as-steps')
          .find((a) => a.content.type === 'error' && String(a.content.body).includes('install Patchbay again')),
      'the thread to hear that the token cannot be renewed',
      60_000,
    );
    expect(told.content.body).toContain('http://patchbay.test/linear/oauth/start');
    const line = app.logLines
      .map((l) => JSON.parse(l) as { level: number; msg?: string; organizationId?: string })
      .find((l) => l.msg?.startsWith('Linear will not refresh the access token'));
    expect(line).toMatchObject({ level: 50, organizationId: linear.organizationId });
    expect(line!.msg).toContain('invalid_grant');
    expect(line!.msg).toContain('install Patchbay again at http://patchbay.test/linear/oauth/start');
    // Linear was asked once with the dead refresh token, not on every call after.
    await waitForStatus(app, session.id, ['completed', 'failed'], 120_000);
    expect(linear.refused.filter((r) => r.operation === 'oauth/token refresh_token').map((r) => r.message)).toEqual([
      'invalid_grant',
    ]);
    expect(new Set(linear.refused.map((r) => r.operation))).toEqual(
      new Set(['oauth/token refresh_token', ...(linear.refused.some((r) => r.operation === 'auth') ? ['auth'] : [])]),
    );
  }, 180_000);
});
