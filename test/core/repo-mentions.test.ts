import { describe, expect, it } from 'vitest';
import { findKnownRepos } from '../../src/core/repo-mentions.ts';

describe('findKnownRepos', () => {
  const bases = ['https://ghe.example.com/git', 'https://github.com'];
  const cases: [string, string, string[], { owner: string; repo: string }[]][] = [
    ['a link on the configured host', 'see https://ghe.example.com/git/acme/api', [], [{ owner: 'acme', repo: 'api' }]],
    ['a link into a repository', 'https://github.com/acme/web/pull/3 broke it', [], [{ owner: 'acme', repo: 'web' }]],
    ['another host', 'https://gitlab.com/acme/api', [], []],
    ['a bare name that is not known', 'fix acme/api please', [], []],
    ['a bare name that is known', 'fix acme/api please', ['acme/api'], [{ owner: 'acme', repo: 'api' }]],
    [
      'links first, then known names, without repeats',
      'acme/web and https://github.com/acme/api, again ACME/API',
      ['acme/web', 'acme/api'],
      [
        { owner: 'acme', repo: 'api' },
        { owner: 'acme', repo: 'web' },
      ],
    ],
  ];
  it.each(cases)('%s', (_name, text, known, expected) => {
    expect(findKnownRepos(text, bases, known)).toEqual(expected);
  });
});
