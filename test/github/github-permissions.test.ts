import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Octokit } from '@octokit/core';
import { collectCiFailure } from '../../integrations/github/ci-follow-up.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { appJwt } from '../fakes/github-app-jwt.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const run = promisify(execFile);

describe('the GitHub fake holds installation tokens to their permissions, per endpoint', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  const api = (path: string, init: { method?: string; token: string; body?: unknown }) =>
    fetch(`${fake.apiUrl}${path}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `${init.token.split('.').length === 3 ? 'Bearer' : 'token'} ${init.token}`,
        accept: 'application/vnd.github+json',
        'content-type': 'application/json',
      },
      ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
    });
  const mint = async (permissions?: Record<string, string>) =>
    api('/app/installations/9/access_tokens', {
      method: 'POST',
      token: appJwt(fake),
      body: { repositories: ['perm'], ...(permissions && { permissions }) },
    });

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    await fake.addRepo('octo-org', 'perm', upstream.remote, 9);
  });
  afterAll(async () => {
    await fake.close();
    await upstream.cleanup();
  });

  it('a contents:write token reads git but cannot comment, react or open or list pull requests', async () => {
    const minted = await mint({ contents: 'write' });
    expect(minted.status).toBe(201);
    const { token, permissions } = (await minted.json()) as { token: string; permissions: Record<string, string> };
    expect(permissions).toEqual({ contents: 'write', metadata: 'read' });
    const refusedBefore = fake.refused.length;
    const comment = await api('/repos/octo-org/perm/issues/3/comments', {
      method: 'POST',
      token,
      body: { body: 'hi' },
    });
    const pr = await api('/repos/octo-org/perm/pulls', {
      method: 'POST',
      token,
      body: { title: 't', head: 'main', base: 'main' },
    });
    const list = await api('/repos/octo-org/perm/pulls?state=open', { token });
    const react = await api('/repos/octo-org/perm/issues/3/reactions', {
      method: 'POST',
      token,
      body: { content: 'eyes' },
    });
    for (const res of [comment, pr, list, react]) {
      expect(res.status).toBe(403);
      expect(((await res.json()) as { message: string }).message).toBe('Resource not accessible by integration');
    }
    expect(fake.refused.slice(refusedBefore).map((r) => r.status)).toEqual([403, 403, 403, 403]);
    const remote = `${fake.gitUrl.replace('http://', `http://x-access-token:${token}@`)}/octo-org/perm.git`;
    expect((await run('git', ['ls-remote', '--heads', remote])).stdout).toMatch(/refs\/heads\/main/);
  });

  it('an issues:write token comments on issues but cannot open pull requests; the default token does both', async () => {
    const issuesOnly = ((await (await mint({ issues: 'write' })).json()) as { token: string }).token;
    expect(
      (await api('/repos/octo-org/perm/issues/3/comments', { method: 'POST', token: issuesOnly, body: { body: 'hi' } }))
        .status,
    ).toBe(201);
    expect(
      (
        await api('/repos/octo-org/perm/pulls', {
          method: 'POST',
          token: issuesOnly,
          body: { title: 't', head: 'x', base: 'main' },
        })
      ).status,
    ).toBe(403);
    // No git at all without contents.
    const remote = `${fake.gitUrl.replace('http://', `http://x-access-token:${issuesOnly}@`)}/octo-org/perm.git`;
    await expect(run('git', ['ls-remote', '--heads', remote])).rejects.toThrow();
    const full = ((await (await mint()).json()) as { token: string }).token;
    expect((await api('/repos/octo-org/perm/pulls?state=open', { token: full })).status).toBe(200);
  });

  it('job logs need actions:read: the call answers 302 to a signed, short-lived link; without the permission both Actions calls are refused', async () => {
    const run = fake.addWorkflowRun('octo-org', 'perm', {
      name: 'CI',
      headSha: 'a'.repeat(40),
      headBranch: 'main',
      jobs: [{ name: 'test', conclusion: 'failure', log: ['boom', '##[error]Process completed with exit code 1.'] }],
    });
    const job = run.jobs[0]!;
    const withActions = ((await (await mint({ actions: 'read' })).json()) as { token: string }).token;
    const jobs = await api(`/repos/octo-org/perm/actions/runs/${run.id}/jobs`, { token: withActions });
    expect(jobs.status).toBe(200);
    expect(
      ((await jobs.json()) as { jobs: { id: number; name: string; conclusion: string; steps: unknown[] }[] }).jobs.map(
        (j) => [j.id, j.name, j.conclusion],
      ),
    ).toEqual([[job.id, 'test', 'failure']]);
    const logs = await fetch(`${fake.apiUrl}/repos/octo-org/perm/actions/jobs/${job.id}/logs`, {
      headers: { authorization: `token ${withActions}` },
      redirect: 'manual',
    });
    expect(logs.status).toBe(302);
    const location = logs.headers.get('location')!;
    // The link works without a token (as GitHub's blob storage does), and a forged one does not.
    expect(await (await fetch(location)).text()).toBe(
      '2026-01-01T00:00:00.0000000Z boom\n2026-01-01T00:00:01.0000000Z ##[error]Process completed with exit code 1.\n',
    );
    const refusedBefore = fake.refused.length;
    expect((await fetch(location.replace(/sig=[0-9a-f]+/, 'sig=forged'))).status).toBe(403);
    const contentsOnly = ((await (await mint({ contents: 'read' })).json()) as { token: string }).token;
    expect((await api(`/repos/octo-org/perm/actions/runs/${run.id}/jobs`, { token: contentsOnly })).status).toBe(403);
    expect(
      (
        await fetch(`${fake.apiUrl}/repos/octo-org/perm/actions/jobs/${job.id}/logs`, {
          headers: { authorization: `token ${contentsOnly}` },
          redirect: 'manual',
        })
      ).status,
    ).toBe(403);
    expect(fake.refused.slice(refusedBefore).map((r) => r.status)).toEqual([403, 403, 403]);

    // What the CI follow-up makes of a missing permission: the excerpt says so, nothing throws.
    const octokit = new Octokit({ baseUrl: fake.apiUrl, auth: contentsOnly });
    const report = {
      installationId: 9,
      owner: 'octo-org',
      repo: 'perm',
      event: 'check_run' as const,
      id: job.id,
      name: 'test',
      headSha: 'a'.repeat(40),
      conclusion: 'failure',
      pullNumbers: [],
      appSlug: 'github-actions',
    };
    const collected = await collectCiFailure(octokit, report, AbortSignal.timeout(10_000));
    expect(collected.jobs[0]!.excerpt).toContain(
      'GitHub answered 403; the GitHub App needs the Actions: read permission',
    );
  });

  it('refuses a token asking for more than the App was granted', async () => {
    const res = await mint({ administration: 'write' });
    expect(res.status).toBe(422);
  });
});

describe('a pull request GitHub refuses with 422 "No commits between"', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    const model = createScriptedProvider({
      scenario: (messages: readonly ModelMessage[]) =>
        messages.some((m) => m.role === 'tool')
          ? { text: 'Added notes.md.' }
          : { toolCalls: [{ name: 'write_file', input: { path: 'notes.md', content: 'notes\n' } }] },
    });
    app = await startGitHubPatchbay(fake, model);
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  it('fails the session with a clear reason in the issue thread when the branch is already in its base', async () => {
    const alice = fake.addUser('alice');
    const repo = await fake.addRepo('octo-org', 'merged', upstream.remote, 12, { alice: 'write' });
    // Between the push and the pull request, something (a merge queue, a person) merged the
    // pushed branch into main: GitHub then has no commits to show and answers 422.
    fake.hooks.beforePullCreate = async ({ gitDir, head, base }) => {
      await run('git', ['--git-dir', gitDir, 'update-ref', `refs/heads/${base}`, `refs/heads/${head}`]);
    };
    void repo;
    const comment = fake.addComment('octo-org', 'merged', 4, alice, '@patchbay-test add notes');
    const payload = issueCommentEvent(
      { owner: 'octo-org', repo: 'merged', installationId: 12 },
      {
        number: 4,
        title: 'Notes',
        body: 'Please add notes.',
        commentId: comment.id,
        user: alice,
        comment: comment.body,
      },
    );
    expect((await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner: 'octo-org', repo: 'merged', number: 4, kind: 'issue' }),
      'the session',
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 60_000);
    expect(done.status).toBe('failed');
    const reason = `No pull request opened: octo-org/merged branch ${done.branch} has no commits that main does not already have (its changes are already in main), so there is nothing to review.`;
    expect(done.error).toBe(reason);
    const reply = await waitFor(
      async () =>
        fake
          .commentsOn('octo-org', 'merged', 4)
          .find((c) => c.user.type === 'Bot' && c.body.includes('No pull request opened')),
      'the reply in the issue',
    );
    expect(reply.body).toContain(reason);
    expect(fake.pulls).toEqual([]);
    expect(fake.refused).toEqual([]);
  }, 90_000);
});
