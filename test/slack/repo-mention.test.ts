import { describe, expect, it } from 'vitest';
import { chooseCandidate, recommendRepo } from '../../integrations/slack/repo-choice.ts';
import { findRepoMentions } from '../../src/core/repo-mentions.ts';

describe('findRepoMentions', () => {
  const cases: [string, string, { owner: string; repo: string; baseBranch?: string }[]][] = [
    [
      'a Slack link',
      '<@U0BOT> fix the typo in <https://github.com/acme/widgets>',
      [{ owner: 'acme', repo: 'widgets' }],
    ],
    [
      'a labelled Slack link',
      'fix <https://github.com/acme/widgets|github.com/acme/widgets> please',
      [{ owner: 'acme', repo: 'widgets' }],
    ],
    [
      'a branch',
      'on <https://github.com/acme/widgets/tree/release/1.x> bump it',
      [{ owner: 'acme', repo: 'widgets', baseBranch: 'release/1.x' }],
    ],
    [
      'a bare host path with branch',
      'github.com/acme/widgets/tree/dev add tests',
      [{ owner: 'acme', repo: 'widgets', baseBranch: 'dev' }],
    ],
    ['a .git suffix', 'clone https://github.com/acme/widgets.git and fix', [{ owner: 'acme', repo: 'widgets' }]],
    ['a PR link names its repo', 'see <https://github.com/acme/widgets/pull/12>', [{ owner: 'acme', repo: 'widgets' }]],
    ['a bare owner/repo', 'in acme/widgets.core rename foo', [{ owner: 'acme', repo: 'widgets.core' }]],
    ['a trailing full stop', 'the repo is acme/widgets.', [{ owner: 'acme', repo: 'widgets' }]],
    ['file paths are not repos', 'fix src/app.ts and docs/README.md', []],
    ['and/or is not a repo', 'add tests and/or docs', []],
    [
      'bare forms are ignored when a link is present',
      '<https://github.com/acme/widgets> edit src/main',
      [{ owner: 'acme', repo: 'widgets' }],
    ],
    ['nothing', '<@U0BOT> please fix the login bug', []],
    ['other hosts are not GitHub', 'https://gitlab.com/acme/widgets fix', []],
    [
      'several, in order, without repeats',
      '<https://github.com/acme/api> or <https://github.com/acme/web|github.com/acme/web>, mostly <https://github.com/acme/api>',
      [
        { owner: 'acme', repo: 'api' },
        { owner: 'acme', repo: 'web' },
      ],
    ],
    [
      'repo and the same repo with a branch',
      'acme/api github.com/acme/api/tree/dev',
      [{ owner: 'acme', repo: 'api', baseBranch: 'dev' }],
    ],
  ];
  it.each(cases)('%s', (_name, text, expected) => {
    expect(findRepoMentions(text)).toEqual(expected);
  });
});

describe('recommendRepo', () => {
  const api = { owner: 'acme', repo: 'api' };
  const web = { owner: 'acme', repo: 'web' };
  it.each([
    ['the most named', 'acme/api vs acme/web, acme/web really', [api, web], web, /most often \(2 times\)/],
    [
      'the one with a branch',
      'acme/api or github.com/acme/web/tree/dev',
      [api, { ...web, baseBranch: 'dev' }],
      { ...web, baseBranch: 'dev' },
      /branch/,
    ],
    ['else the first', 'acme/api or acme/web', [api, web], api, /first/],
  ] as const)('%s', (_name, text, candidates, pick, why) => {
    const result = recommendRepo(text, [...candidates]);
    expect(result.pick).toEqual(pick);
    expect(result.why).toMatch(why);
  });
});

describe('chooseCandidate', () => {
  const candidates = [
    { owner: 'acme', repo: 'api' },
    { owner: 'acme', repo: 'web' },
  ];
  it.each([
    ['2', candidates[1]],
    ['#1', candidates[0]],
    ['acme/web please', candidates[1]],
    ['<https://github.com/acme/api>', candidates[0]],
    ['the web one', candidates[1]],
    ['both api and web', undefined],
    ['3', undefined],
    ['no idea', undefined],
  ])('%s', (reply, expected) => {
    expect(chooseCandidate(reply, candidates)).toEqual(expected);
  });
});
