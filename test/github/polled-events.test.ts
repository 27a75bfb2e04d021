import { describe, expect, it } from 'vitest';
import { classifyWebhook } from '../../integrations/github/classify-webhook.ts';
import {
  checkSuiteEvent,
  issueCommentEvent,
  newMentions,
  numberOf,
  type PolledComment,
} from '../../integrations/github/polled-events.ts';
import { githubDedupeKey } from '../../integrations/github/webhook-keys.ts';

const bot = { slug: 'patchbay', login: 'patchbay[bot]', mention: '@patchbay' };
const alice = { login: 'alice', id: 7, type: 'User' };
const since = new Date('2026-12-07T10:00:00Z');
const comment = (id: number, body: string, created: string, updated = created): PolledComment => ({
  id,
  body,
  user: alice,
  created_at: created,
  updated_at: updated,
  issue_url: `https://api.github.com/repos/o/r/issues/${id}`,
});
const where = {
  repository: { id: 1, name: 'r', full_name: 'o/r', owner: { login: 'o' } },
  installationId: 9,
};

describe('what a look at a comment list takes', () => {
  it.each([
    ['a new mention', comment(1, '@patchbay fix it', '2026-12-07T10:00:05Z'), true],
    ['a mention made at the mark itself', comment(2, '@patchbay fix it', '2026-12-07T10:00:00Z'), true],
    ['a new comment without a mention', comment(3, 'looks good', '2026-12-07T10:00:05Z'), false],
    ['a mention of another app', comment(4, '@patchbay-other fix it', '2026-12-07T10:00:05Z'), false],
    // Listed because it was edited since: its webhook would be `edited`, which asks for nothing.
    [
      'an older comment edited to mention the App',
      comment(5, '@patchbay fix', '2026-12-07T09:00:00Z', '2026-12-07T10:00:09Z'),
      false,
    ],
  ])('%s: taken %s', (_what, c, taken) => {
    expect(newMentions([c], since, bot).mentions.map((m) => m.id)).toEqual(taken ? [c.id] : []);
  });

  it('moves the mark to the newest update seen on GitHub, never back', () => {
    const listed = [
      comment(1, 'a', '2026-12-07T10:00:05Z', '2026-12-07T10:00:07Z'),
      comment(2, 'b', '2026-12-07T10:00:06Z'),
    ];
    expect(newMentions(listed, since, bot).nextSince.toISOString()).toBe('2026-12-07T10:00:07.000Z');
    expect(newMentions([], since, bot).nextSince).toEqual(since);
  });

  it('reads the number at the end of an issue or pull request URL', () => {
    expect(numberOf('https://api.github.com/repos/o/r/pulls/42')).toBe(42);
    expect(numberOf(undefined)).toBeUndefined();
  });
});

describe('the webhook a polled object would have been', () => {
  it('an edited mention keeps the dedupe key of its created webhook, so two looks take it once', () => {
    const created = comment(11, '@patchbay fix it', '2026-12-07T10:00:05Z');
    const edited = { ...created, updated_at: '2026-12-07T10:05:00Z' };
    const issue = { id: 311, number: 11, title: 'T', body: null, user: alice, updated_at: '2026-12-07T10:05:00Z' };
    const key = (c: PolledComment) => {
      const { payload } = issueCommentEvent(where, c, issue);
      return githubDedupeKey(JSON.stringify(payload), payload);
    };
    expect(key(edited)).toBe(key(created));
    expect(key(created)).toBe('issue-comment:11:created:2026-12-07T10:00:05Z');
  });

  it('is classified by the same classifier as the webhook: a request with the installation and sender', () => {
    const polled = issueCommentEvent(where, comment(12, '@patchbay add tests', '2026-12-07T10:00:05Z'), {
      number: 12,
      title: 'Tests',
      body: 'none yet',
      user: alice,
      pull_request: { url: 'x' },
    });
    const classified = classifyWebhook(polled.event, polled.payload, bot, 'patchbay');
    expect(classified).toMatchObject({
      kind: 'work',
      request: { kind: 'pull', installationId: 9, owner: 'o', repo: 'r', number: 12, sender: { login: 'alice' } },
    });
  });

  it('a check suite becomes a check_suite event only once completed, naming the pull request', () => {
    const pull = {
      number: 3,
      user: { login: 'patchbay[bot]' },
      head: { ref: 'b', sha: 'abc' },
      base: { ref: 'main', sha: 'def' },
    };
    const queued = { id: 5, status: 'queued', conclusion: null, head_sha: 'abc', pull_requests: [] };
    expect(checkSuiteEvent(where, queued, pull)).toBeUndefined();
    const done = checkSuiteEvent(where, { ...queued, status: 'completed', conclusion: 'failure' }, pull)!;
    expect(classifyWebhook(done.event, done.payload, bot, 'patchbay')).toMatchObject({
      kind: 'ci',
      report: { event: 'check_suite', id: 5, headSha: 'abc', conclusion: 'failure', pullNumbers: [3] },
    });
  });
});
