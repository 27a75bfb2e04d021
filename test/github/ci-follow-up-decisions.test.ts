import { describe, expect, it } from 'vitest';
import { decideCiFollowUp, failureSignature, logExcerpt } from '../../integrations/github/ci-follow-up.ts';
import { autofixRequest } from '../../integrations/github/bot-mention.ts';
import { classifyWebhook } from '../../integrations/github/classify-webhook.ts';
import { example } from '../fakes/fake-github-webhooks.ts';

const bot = { slug: 'patchbay', login: 'patchbay[bot]', mention: '@patchbay' };
const withInstallation = (p: Record<string, any>): Record<string, any> => ({
  ...p,
  installation: { id: 7, node_id: 'x' },
});

describe('decideCiFollowUp', () => {
  const ours = { headIsOurs: true, sessionStatus: 'completed', signature: 'test: B' };
  it.each([
    ['first failure on our commit', { ...ours, earlier: [] }, { followUp: true }],
    ['second, different failure', { ...ours, earlier: [{ followUp: true, signature: 'test: A' }] }, { followUp: true }],
    [
      'the same failure again after our attempt',
      { ...ours, earlier: [{ followUp: true, signature: 'test: B' }] },
      { followUp: false, reason: 'the same failure came back after my last attempt to fix it' },
    ],
    [
      'a third failure after two attempts',
      {
        ...ours,
        signature: 'test: C',
        earlier: [
          { followUp: true, signature: 'test: A' },
          { followUp: true, signature: 'test: B' },
        ],
      },
      { followUp: false, reason: 'I already made 2 automatic attempts to fix CI on this pull request' },
    ],
    [
      'earlier failures that started nothing do not count',
      {
        ...ours,
        earlier: [
          { followUp: false, signature: 'x' },
          { followUp: false, signature: 'y' },
        ],
      },
      { followUp: true },
    ],
    [
      "a person's commit",
      { ...ours, headIsOurs: false, earlier: [] },
      {
        followUp: false,
        reason: 'the failing commit was pushed by someone else, not by me, so I leave the fix to them',
      },
    ],
    [
      'a session busy with other work',
      { ...ours, sessionStatus: 'running', earlier: [] },
      { followUp: false, reason: 'the session is running with other work' },
    ],
  ])('%s', (_name, input, expected) => {
    expect(decideCiFollowUp(input)).toEqual(expected);
  });
});

describe('logExcerpt and failureSignature', () => {
  const log = (error: string, ms: number) =>
    [
      '2026-01-01T00:00:00.1234567Z ##[group]Run npm test',
      `2026-01-01T00:00:01.0000000Z ${error}`,
      `2026-01-01T00:00:02.0000000Z done in ${ms} ms at abcdef1234567`,
      '2026-01-01T00:00:03.0000000Z ##[endgroup]',
      '2026-01-01T00:00:03.0000000Z ##[error]Process completed with exit code 1.',
    ].join('\n');
  it('drops timestamps and group markers and keeps the error lines', () => {
    const { excerpt } = logExcerpt(log('AssertionError: 4 !== 5', 12));
    expect(excerpt).toBe(
      'AssertionError: 4 !== 5\ndone in 12 ms at abcdef1234567\n##[error]Process completed with exit code 1.',
    );
  });
  it('keeps the error lines of a long log even when they are not at its end', () => {
    const long = ['##[error]first failure', ...Array.from({ length: 100 }, (_, i) => `line ${i}`)].join('\n');
    expect(logExcerpt(long).excerpt.startsWith('##[error]first failure\n…\nline 40')).toBe(true);
  });
  it('is the same for the same failure on another commit and another run, and differs for another failure', () => {
    const sig = (text: string, ms: number) =>
      failureSignature([{ name: 'test', errors: logExcerpt(log(text, ms)).errors }]);
    expect(sig('AssertionError: 4 !== 5 at deadbeef12', 10)).toBe(sig('AssertionError: 4 !== 5 at cafebabe34', 99));
    expect(sig('AssertionError: 4 !== 5', 10)).not.toBe(
      sig("TypeError: Cannot read properties of undefined (reading 'total')", 10),
    );
  });
});

describe('classifyWebhook for CI events (published examples)', () => {
  it('reads a failed check run (check_run.completed, failure example) with its pull requests and app', () => {
    const c = classifyWebhook('check_run', withInstallation(example('check_run', 'completed')), bot, 'patchbay');
    expect(c).toEqual({
      kind: 'ci',
      report: {
        installationId: 7,
        owner: 'Codertocat',
        repo: 'Hello-World',
        event: 'check_run',
        id: 128620228,
        name: 'Octocoders-linter',
        url: 'https://github.com/Codertocat/Hello-World/runs/128620228',
        headSha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821',
        conclusion: 'failure',
        pullNumbers: [2],
        appSlug: 'github-actions',
      },
    });
  });
  it('reads a completed workflow run and check suite; ignores runs that have not completed and deliveries without an installation', () => {
    const run = withInstallation(example('workflow_run', 'completed', 1));
    expect(classifyWebhook('workflow_run', run, bot, 'patchbay')).toMatchObject({
      kind: 'ci',
      report: { event: 'workflow_run', conclusion: 'success', appSlug: 'github-actions' },
    });
    const suite = withInstallation(example('check_suite', 'completed'));
    expect(classifyWebhook('check_suite', suite, bot, 'patchbay')).toMatchObject({
      kind: 'ci',
      report: { event: 'check_suite', id: suite.check_suite.id, conclusion: 'success' },
    });
    expect(
      classifyWebhook('workflow_run', withInstallation(example('workflow_run', 'requested')), bot, 'patchbay'),
    ).toEqual({ kind: 'ignore', reason: 'workflow_run requested' });
    expect(classifyWebhook('check_run', example('check_run', 'completed'), bot, 'patchbay')).toEqual({
      kind: 'ignore',
      reason: 'delivery without an installation (not an App webhook)',
    });
    expect(classifyWebhook('check_run', { action: 'completed', check_run: { id: 'x' } }, bot, 'patchbay')).toEqual({
      kind: 'broken',
      reason: 'unreadable check_run payload',
    });
  });
  it.each([
    ['@patchbay autofix off', false],
    ['@PatchBay Autofix on.', true],
    ['@patchbay autofix off and fix the test', undefined],
    ['@patchbay-bot autofix off', undefined],
  ])('autofixRequest(%j) → %s', (text, expected) => {
    expect(autofixRequest(text, bot)).toBe(expected);
  });
  it('reads a pull request closed unmerged (published example), and ignores a merged one or one a bot closed', () => {
    const closed = withInstallation(example('pull_request', 'closed'));
    expect(classifyWebhook('pull_request', closed, bot, 'patchbay')).toEqual({
      kind: 'pull-closed',
      closed: {
        installationId: 7,
        owner: 'Codertocat',
        repo: 'Hello-World',
        number: 2,
        title: closed.pull_request.title,
        body: closed.pull_request.body ?? '',
        sender: { login: closed.sender.login, id: closed.sender.id },
      },
    });
    expect(
      classifyWebhook(
        'pull_request',
        { ...closed, pull_request: { ...closed.pull_request, merged: true } },
        bot,
        'patchbay',
      ),
    ).toEqual({ kind: 'ignore', reason: 'pull request merged' });
    expect(
      classifyWebhook(
        'pull_request',
        { ...closed, sender: { login: 'patchbay[bot]', id: 1, type: 'Bot' } },
        bot,
        'patchbay',
      ),
    ).toEqual({ kind: 'ignore', reason: 'closed by a bot' });
  });
});
