import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createOutcomeStore, pullKeyOfUrl } from '../../src/sessions/harness-stores/outcome-store.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import type { OutcomeLedger } from '../../src/core/pull-outcome.ts';
import { createTestDatabase, databaseTargets } from '../helpers/test-database.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice' };
const day = 24 * 60 * 60 * 1000;
const merge = (n: number) => String(n).repeat(40).slice(0, 40);

describe.each(databaseTargets())('the outcome ledger on $name PostgreSQL', (target) => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let sessions: SessionStore;
  let ledger: OutcomeLedger;

  beforeAll(async () => {
    handle = await createTestDatabase(target);
    sessions = createSessionStore(handle.db);
    ledger = createOutcomeStore(handle.db);
  });
  afterAll(() => handle.close());

  const row = (number: number) =>
    handle.db.selectFrom('pull_outcomes').selectAll().where('number', '=', number).executeTakeFirstOrThrow();
  async function opened(number: number, commit = 'p1') {
    const id = `s-${number}`;
    if (!(await sessions.get(id)))
      await sessions.create({
        id,
        repo: 'https://github.com/Octo/Shop',
        prompt: 'p',
        title: 't',
        requester: alice,
        thread: { source: 'web' },
      });
    await ledger.opened({
      owner: 'Octo',
      repo: 'Shop',
      number,
      sessionId: id,
      url: `https://github.com/Octo/Shop/pull/${number}`,
      branch: `patchbay/${number}`,
      baseBranch: 'main',
      commit,
      at: new Date(),
    });
  }

  it("counts people's commits and reviews once however often they are told, and forgets the commits when Patchbay pushes again", async () => {
    await opened(1);
    const where = { owner: 'octo', repo: 'shop', branch: 'patchbay/1' };
    await ledger.humanCommits(where, ['h1', 'h2']);
    await ledger.humanCommits(where, ['h2']);
    await ledger.reviewed({ owner: 'OCTO', repo: 'shop', number: 1 }, 11);
    await ledger.reviewed({ owner: 'octo', repo: 'shop', number: 1 }, 11);
    expect((await row(1)).human_commits.sort()).toEqual(['h1', 'h2']);
    expect((await row(1)).review_ids).toEqual([11]);
    await opened(1, 'p1');
    expect((await row(1)).human_commits).toHaveLength(2);
    await opened(1, 'p2');
    expect((await row(1)).human_commits).toEqual([]);
    expect((await row(1)).patchbay_commit).toBe('p2');
  });

  it('keeps CI and a revert of a merge commit that are worked before the merge itself, and applies them when it is recorded', async () => {
    await opened(41);
    const where = { owner: 'octo', repo: 'shop' };
    const mergedAt = new Date(Date.now() - day);
    // The default branch's webhooks are not ordered with the pull request's: these came first.
    await ledger.mergeCi(where, merge(4), 'failure', new Date(mergedAt.getTime() + 1000));
    await ledger.mergeCi(where, merge(4), 'success', new Date(mergedAt.getTime() + 2000));
    expect(await ledger.reverted(where, merge(4).slice(0, 12), 'r41', new Date(mergedAt.getTime() + 3000))).toEqual([]);
    await ledger.finished({
      owner: 'octo',
      repo: 'shop',
      number: 41,
      state: 'merged',
      at: mergedAt,
      by: 'carol',
      mergeCommit: merge(4),
    });
    expect(await row(41)).toMatchObject({
      state: 'merged',
      merge_commit: merge(4),
      merge_ci: 'failure',
      revert_commit: 'r41',
    });
    // Nothing is kept for a repository with no Patchbay pull request.
    await ledger.mergeCi({ owner: 'else', repo: 'where' }, merge(5), 'success', new Date());
    expect(await handle.db.selectFrom('commit_signals').select('commit').where('owner', '=', 'else').execute()).toEqual(
      [],
    );
  });

  it('marks a revert of the merge commit within 14 days, not later, and ignores PRs no session opened', async () => {
    await opened(2);
    await opened(3);
    const mergedAt = new Date('2026-03-01T00:00:00Z');
    await ledger.finished({
      owner: 'octo',
      repo: 'shop',
      number: 2,
      state: 'merged',
      at: mergedAt,
      by: 'carol',
      mergeCommit: merge(2),
    });
    await ledger.finished({
      owner: 'octo',
      repo: 'shop',
      number: 3,
      state: 'merged',
      at: mergedAt,
      by: 'carol',
      mergeCommit: merge(3),
    });
    await ledger.finished({
      owner: 'octo',
      repo: 'shop',
      number: 99,
      state: 'merged',
      at: mergedAt,
      by: 'carol',
      mergeCommit: merge(9),
    });
    expect(
      await ledger.reverted(
        { owner: 'octo', repo: 'shop' },
        merge(2).slice(0, 12),
        'r2',
        new Date(mergedAt.getTime() + 13 * day),
      ),
    ).toEqual([{ owner: 'octo', repo: 'shop', number: 2 }]);
    expect(
      await ledger.reverted({ owner: 'octo', repo: 'shop' }, merge(3), 'r3', new Date(mergedAt.getTime() + 15 * day)),
    ).toEqual([]);
    expect(await ledger.reverted({ owner: 'other', repo: 'shop' }, merge(2), 'r4', mergedAt)).toEqual([]);
    expect(await row(2)).toMatchObject({ state: 'merged', finished_by: 'carol', revert_commit: 'r2' });
    expect((await row(3)).reverted_at).toBeNull();
    expect(await handle.db.selectFrom('pull_outcomes').select('number').where('number', '=', 99).execute()).toEqual([]);
  });

  it('keeps a failure of CI on the merge commit over a later success', async () => {
    await ledger.mergeCi({ owner: 'Octo', repo: 'Shop' }, merge(3), 'failure', new Date());
    await ledger.mergeCi({ owner: 'Octo', repo: 'Shop' }, merge(3), 'success', new Date());
    expect((await row(3)).merge_ci).toBe('failure');
  });

  it('tracks PRs sessions opened before outcome tracking, from their pr-opened events, as backfill candidates', async () => {
    await sessions.create({
      id: 'old',
      repo: 'https://github.com/octo/shop',
      prompt: 'p',
      title: 't',
      requester: alice,
      thread: { source: 'web' },
    });
    await sessions.append('old', [
      {
        event: {
          type: 'pr-opened',
          url: 'https://github.com/Octo/Shop/pull/40',
          number: 40,
          branch: 'patchbay/old',
          commit: 'c1',
        },
      },
    ]);
    await sessions.append('old', [
      {
        event: {
          type: 'pr-opened',
          url: 'https://github.com/Octo/Shop/pull/40',
          number: 40,
          branch: 'patchbay/old',
          commit: 'c2',
        },
      },
    ]);
    const candidates = await ledger.backfillCandidates();
    expect(candidates).toEqual(
      expect.arrayContaining([
        { owner: 'octo', repo: 'shop', number: 40 },
        { owner: 'octo', repo: 'shop', number: 1 },
      ]),
    );
    expect(candidates).not.toContainEqual({ owner: 'octo', repo: 'shop', number: 2 });
    expect(await row(40)).toMatchObject({
      session_id: 'old',
      branch: 'patchbay/old',
      patchbay_commit: 'c2',
      state: 'open',
    });
  });

  it.each([
    ['https://github.com/Octo/Shop/pull/7', { owner: 'octo', repo: 'shop', number: 7 }],
    ['http://127.0.0.1:8080/o/r/pull/12/', { owner: 'o', repo: 'r', number: 12 }],
    ['https://github.com/o/r/issues/7', undefined],
  ])('reads %s as %j', (url, key) => expect(pullKeyOfUrl(url)).toEqual(key));
});
