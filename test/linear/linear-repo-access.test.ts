import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { installationCreatedEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook, type LinearUser } from '../fakes/linear/fake-linear-webhooks.ts';
import { githubSecret, linearSecret, startLinearPatchbay, type LinearPatchbay } from './linear-fixture.ts';

/** Ada's GitHub account (linked in Linear) writes in octo-org (installation 77), not in victim-org (88). */
const mine = { owner: 'octo-org', repo: 'public', installationId: 77 };
const theirs = { owner: 'victim-org', repo: 'secret', installationId: 88 };
const ada: LinearUser = { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' };

/**
 * Issue 36, item 1, for a repository named in a Linear issue: the requester is the person who
 * delegated it, known to GitHub through the account they linked in Linear (User.gitHubUserId).
 * Their session on a repository that account cannot write (another installation's) is refused
 * before its clone, and the agent session hears why; on their own organization's it runs.
 */
describe('a Linear issue naming a repository its requester cannot write', () => {
  let linear: FakeLinear;
  let github: FakeGitHub;
  let remotes: RemoteFixture[] = [];
  let app: LinearPatchbay;
  let aliceId: number;
  const model = createScriptedProvider({ scenario: () => ({ text: 'Nothing to do.' }) });
  const hook = () => `${app.url}/linear/webhooks`;
  const urlOf = (where: { owner: string; repo: string }) => `${github.gitUrl}/${where.owner}/${where.repo}`;

  beforeAll(async () => {
    linear = await startFakeLinear();
    github = await startFakeGitHub();
    const alice = github.addUser('alice');
    github.addUser('victor');
    aliceId = alice.id;
    linear.addUser({ ...ada, gitHubUserId: alice.id });
    const own = await createRemote();
    const other = await createRemote();
    await other.pushCommit('SECRET.txt', 'the-secret-value\n', 'Secret');
    remotes = [own, other];
    await github.addRepo(mine.owner, mine.repo, own.remote, mine.installationId, { alice: 'write' });
    await github.addRepo(theirs.owner, theirs.repo, other.remote, theirs.installationId, { victor: 'admin' });
    linear.addTeam({
      id: 'team-eng',
      key: 'ENG',
      name: 'Engineering',
      states: [{ id: 'st-todo', name: 'Todo', type: 'unstarted', position: 1 }],
    });
    app = await startLinearPatchbay({ linear, github }, model);
    // Both installations, as GitHub announces them: every repository Linear may name or be offered.
    for (const [where, id] of [
      [mine, 501],
      [theirs, 502],
    ] as const) {
      const installed = installationCreatedEvent(where.installationId, where.owner, [
        { id, full_name: `${where.owner}/${where.repo}` },
      ]);
      expect((await sendWebhook(`${app.url}/github/webhooks`, githubSecret, 'installation', installed)).status).toBe(
        202,
      );
    }
    await waitFor(
      async () => (await app.database.db.selectFrom('github_installation_repos').selectAll().execute()).length === 2,
      'both installations',
    );
  }, 90_000);
  afterAll(async () => {
    await app?.dispose();
    await linear?.close();
    await github?.close();
    for (const remote of remotes) await remote.cleanup();
  });

  /** Delegates an issue whose description names `where` and waits for its session to end. */
  async function delegate(agentSessionId: string, identifier: string, where: { owner: string; repo: string }) {
    const issue = linear.addIssue({
      id: `issue-${identifier}`,
      identifier,
      title: 'Tidy the readme',
      description: `The readme is untidy. Code: ${urlOf(where)}`,
      teamId: 'team-eng',
      stateId: 'st-todo',
    });
    const created = agentSessionCreated(linear, { agentSessionId, issue, creator: ada });
    expect((await sendLinearWebhook(hook(), linearSecret, created)).status).toBe(200);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'linear', agentSessionId, issueId: issue.id }),
      'the session',
    );
    expect(session.repo).toBe(urlOf(where));
    expect(session.requester.githubId).toBe(String(aliceId));
    return waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 90_000);
  }

  it('refuses the session before anything of that repository is fetched, and says why in the agent session', {
    timeout: 150_000,
  }, async () => {
    const done = await delegate('as-secret', 'ENG-1', theirs);
    expect(done.status).toBe('failed');
    expect(done.error).toContain('Ada (@alice on GitHub) has no write access to victim-org/secret');
    const said = await linear.waitFor(
      () => linear.activitiesOf('as-secret').find((a) => a.content.type === 'error'),
      'the error activity',
    );
    expect(said.content.body).toContain('has no write access to victim-org/secret');
    expect(github.gitRequests.filter((r) => r.path.startsWith(`/${theirs.owner}/`))).toEqual([]);
    expect(github.refused).toEqual([]);
    expect(linear.refused).toEqual([]);
  });

  it('works for the same requester on a repository their linked account can write', {
    timeout: 150_000,
  }, async () => {
    const done = await delegate('as-public', 'ENG-2', mine);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    expect(github.gitRequests.some((r) => r.path.startsWith(`/${mine.owner}/${mine.repo}`))).toBe(true);
    expect(github.refused).toEqual([]);
    expect(linear.refused).toEqual([]);
  });
});
