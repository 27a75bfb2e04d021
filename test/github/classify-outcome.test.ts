import { describe, expect, it } from 'vitest';
import { classifyOutcome } from '../../integrations/github/classify-outcome.ts';
import { revertedCommit } from '../../src/core/pull-outcome.ts';
import { example } from '../fakes/fake-github-webhooks.ts';

const bot = { login: 'patchbay-test[bot]', slug: 'patchbay-test', mention: '@patchbay-test', id: 1 };
const app = (p: Record<string, any>): Record<string, any> => ({ ...p, installation: { id: 7 } });
const sha = 'c'.repeat(40);

function push(ref: string, message: string, sender = { login: 'alice', id: 2, type: 'User' }) {
  const p = app(example('push', undefined as unknown as string, 4));
  p.ref = ref;
  p.sender = sender;
  p.commits = [{ ...p.commits[0], id: 'e'.repeat(40), message, timestamp: '2026-03-01T10:00:00Z' }];
  return p;
}

describe('revertedCommit: the commit a revert names, as git writes it', () => {
  it.each([
    [
      `Revert "Merge pull request #3 from o/b"\n\nThis reverts commit ${sha}, reversing\nchanges made to ${'a'.repeat(40)}.`,
      sha,
    ],
    [`Revert "Add x"\n\nThis reverts commit ${sha}.`, sha],
    [`Add x\n\nThis reverts commit ${sha}.`, undefined],
    ['Revert "Add x"\n\nno sha here', undefined],
    [`Revert "Add x"\n\nSee: This reverts commit ${sha}.`, undefined],
  ])('%j → %s', (message, expected) => expect(revertedCommit(message)).toBe(expected));
});

describe('classifyOutcome: outcome signals in published webhook examples', () => {
  it('a merged pull request: merged, when, by its merger, as its merge commit', () => {
    const p = app(example('pull_request', 'closed'));
    p.pull_request = {
      ...p.pull_request,
      merged: true,
      merged_at: '2026-03-01T09:00:00Z',
      merge_commit_sha: sha,
      merged_by: { login: 'carol', id: 3, type: 'User' },
    };
    expect(classifyOutcome('pull_request', p, bot)).toEqual([
      {
        kind: 'finished',
        pull: {
          owner: p.repository.owner.login,
          repo: p.repository.name,
          number: p.pull_request.number,
          state: 'merged',
          at: new Date('2026-03-01T09:00:00Z'),
          by: 'carol',
          mergeCommit: sha,
        },
      },
    ]);
  });

  it('a pull request closed unmerged: closed, when, by the sender', () => {
    const p = app(example('pull_request', 'closed'));
    p.pull_request = { ...p.pull_request, merged: false, closed_at: '2026-03-02T09:00:00Z' };
    const [signal] = classifyOutcome('pull_request', p, bot);
    expect(signal).toMatchObject({
      kind: 'finished',
      pull: { state: 'closed', at: new Date('2026-03-02T09:00:00Z'), by: p.sender.login },
    });
    // The example carries a merge_commit_sha (GitHub's test merge); an unmerged PR has no merge commit.
    expect(signal).not.toHaveProperty('pull.mergeCommit');
  });

  it.each([
    ['opened', () => app(example('pull_request', 'opened'))],
    [
      'closed, not an App delivery',
      () => {
        const p = example('pull_request', 'closed');
        delete p.installation;
        return p;
      },
    ],
  ])('nothing for a pull_request %s', (_what, payload) =>
    expect(classifyOutcome('pull_request', payload(), bot)).toEqual([]),
  );

  it('a revert pushed to the default branch: the reverted commit; by a person, also their commits', () => {
    const p = push(
      'refs/heads/master',
      `Revert "Merge pull request #3 from o/b"\n\nThis reverts commit ${sha}, reversing\nchanges made to ${'a'.repeat(40)}.`,
    );
    expect(classifyOutcome('push', p, bot)).toEqual([
      {
        kind: 'revert',
        where: { owner: p.repository.owner.login, repo: p.repository.name },
        reverted: sha,
        revertCommit: 'e'.repeat(40),
        at: new Date('2026-03-01T10:00:00Z'),
      },
      {
        kind: 'human-commits',
        where: { owner: p.repository.owner.login, repo: p.repository.name },
        branch: 'master',
        shas: ['e'.repeat(40)],
      },
    ]);
  });

  it('a revert message on another branch is no revert on the default branch', () => {
    const p = push('refs/heads/topic', `Revert "x"\n\nThis reverts commit ${sha}.`);
    expect(classifyOutcome('push', p, bot).map((s) => s.kind)).toEqual(['human-commits']);
  });

  it.each([
    ['by the App itself', push('refs/heads/topic', 'Fix', { login: 'patchbay-test[bot]', id: 1, type: 'Bot' })],
    ['of a tag', push('refs/tags/v1', 'Fix')],
  ])('no human commits from a push %s', (_what, p) => expect(classifyOutcome('push', p, bot)).toEqual([]));

  it('a review a person submitted counts; one by a bot does not', () => {
    const p = app(example('pull_request_review', 'submitted'));
    expect(classifyOutcome('pull_request_review', p, bot)).toEqual([
      {
        kind: 'review',
        pull: { owner: p.repository.owner.login, repo: p.repository.name, number: p.pull_request.number },
        reviewId: p.review.id,
      },
    ]);
    p.review.user = { ...p.review.user, login: 'ci[bot]', type: 'Bot' };
    expect(classifyOutcome('pull_request_review', p, bot)).toEqual([]);
  });

  it('CI finished on a commit: a check suite, and a commit status (error counts as failure; pending is not finished)', () => {
    const suite = app(example('check_suite', 'completed'));
    expect(classifyOutcome('check_suite', suite, bot)).toEqual([
      {
        kind: 'ci',
        where: { owner: suite.repository.owner.login, repo: suite.repository.name },
        commit: suite.check_suite.head_sha,
        conclusion: suite.check_suite.conclusion,
        at: new Date(suite.check_suite.updated_at),
      },
    ]);
    const status = app(example('status', undefined as unknown as string, 0));
    expect(classifyOutcome('status', { ...status, state: 'error' }, bot)).toMatchObject([
      { kind: 'ci', commit: status.sha, conclusion: 'failure' },
    ]);
    expect(classifyOutcome('status', { ...status, state: 'pending' }, bot)).toEqual([]);
    expect(classifyOutcome('check_suite', app(example('check_suite', 'requested')), bot)).toEqual([]);
  });
});
