import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'approvals';
const installationId = 78;
const issueNumber = 9001;
/** Appends a line to published.txt each time it really runs; `npm publish` makes it a held command. */
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

describe('approvals decided in GitHub comments (fake GitHub, real Patchbay, APPROVALS=on)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  let bob: ReturnType<FakeGitHub['addUser']>;
  let rob: ReturnType<FakeGitHub['addUser']>;
  const where = { owner, repo, installationId };

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    alice = fake.addUser('alice');
    bob = fake.addUser('bob');
    rob = fake.addUser('rob');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write', bob: 'write', rob: 'read' });
    // Publishing is refused unless an operator's rule lets it ask: this one does.
    app = await startGitHubPatchbay(fake, createScriptedProvider({ scenario: publishScenario }), {
      APPROVALS: 'on',
      APPROVAL_RULES: 'publish=ask',
    });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  const say = async (user: typeof alice, text: string) => {
    const comment = fake.addComment(owner, repo, issueNumber, user, text);
    const payload = issueCommentEvent(where, {
      number: issueNumber,
      title: 'Release',
      body: 'Publish the package.',
      commentId: comment.id,
      user,
      comment: comment.body,
    });
    expect((await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload)).status).toBe(202);
  };
  const botSays = (test: (body: string) => boolean, what: string) =>
    waitFor(
      async () =>
        fake.commentsOn(owner, repo, issueNumber).find((c) => c.user.login === fake.bot.login && test(c.body)),
      what,
      30_000,
    );

  it('the request is in the progress comment; write access may deny with a reason; read access cannot; approve runs it once', {
    timeout: 120_000,
  }, async () => {
    await say(alice, '@patchbay-test please publish the package');
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number: issueNumber, kind: 'issue' }),
      'the session',
    );
    await waitForStatus(app, session.id, ['waiting']);
    const progress = await botSays((b) => b.includes('Approval needed'), 'the approval request');
    expect(progress.body).toContain(PUBLISH);
    expect(progress.body).toContain('@patchbay-test approve');

    // Bob has write access: on GitHub he may decide for Alice.
    await say(bob, '@patchbay-test deny we publish from CI only');
    await waitFor(
      async () => (await app.store.events(session.id, { types: ['approval-requested'] })).length === 2 || undefined,
      'the second request',
    );
    await waitForStatus(app, session.id, ['waiting']);

    // Rob can only read: he is told so, and nothing is decided.
    await say(rob, '@patchbay-test approve');
    await botSays((b) => b.startsWith('@rob Sorry, only people with write access'), "Rob's refusal");
    expect((await app.store.events(session.id, { types: ['approval-decided'] })).length).toBe(1);

    await say(alice, '@patchbay-test approve');
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');
    const outputs = (await app.store.events(session.id, { types: ['tool-end'] })).map((e) =>
      e.event.type === 'tool-end' ? e.event.output : '',
    );
    expect(outputs).toEqual([
      'Not approved: bob denied it: we publish from CI only. The command did not run.',
      'Exit code: 0\nstdout:\nabsent\n',
      'Exit code: 0',
      'Exit code: 0\nstdout:\nonce\n',
    ]);
    const decided = (await app.store.events(session.id, { types: ['approval-decided'] })).map((e) => e.event);
    expect(decided).toMatchObject([
      { decision: 'denied', surface: 'github', actor: { name: 'bob' }, reason: 'we publish from CI only' },
      { decision: 'approved', surface: 'github', actor: { name: 'alice' } },
    ]);
  });
});
