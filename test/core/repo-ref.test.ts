import { describe, expect, it } from 'vitest';
import { parseRepoName, parseRepoUrl, repoUrl, sameRepo } from '../../src/core/repo-ref.ts';

const ghe = 'https://ghe.acme.test/git';

describe('parseRepoUrl', () => {
  const cases: [
    string,
    string,
    string | readonly string[],
    { trailingPath?: boolean },
    { owner: string; repo: string } | undefined,
  ][] = [
    ['a github.com URL', 'https://github.com/acme/shop', 'https://github.com', {}, { owner: 'acme', repo: 'shop' }],
    [
      '.git and a trailing slash',
      'https://github.com/acme/shop.git/',
      'https://github.com',
      {},
      { owner: 'acme', repo: 'shop' },
    ],
    [
      'www.github.com is github.com',
      'https://www.github.com/acme/shop',
      'https://github.com',
      {},
      { owner: 'acme', repo: 'shop' },
    ],
    [
      'a GitHub Enterprise URL under its path prefix',
      'https://ghe.acme.test/git/acme/shop',
      ghe,
      {},
      { owner: 'acme', repo: 'shop' },
    ],
    ['a GitHub Enterprise host is not github.com', 'https://github.com/acme/shop', ghe, {}, undefined],
    [
      'github.com is not the GitHub Enterprise host',
      'https://ghe.acme.test/git/acme/shop',
      'https://github.com',
      {},
      undefined,
    ],
    ['outside the prefix', 'https://ghe.acme.test/acme/shop', ghe, {}, undefined],
    ['another scheme on an enterprise host', 'http://ghe.acme.test/git/acme/shop', ghe, {}, undefined],
    [
      'either of several bases',
      'https://ghe.acme.test/git/acme/shop',
      ['https://github.com', ghe],
      {},
      { owner: 'acme', repo: 'shop' },
    ],
    [
      'a deeper link only with trailingPath',
      'https://github.com/acme/shop/pull/3',
      'https://github.com',
      {},
      undefined,
    ],
    [
      'a deeper link with trailingPath',
      'https://github.com/acme/shop/tree/main',
      'https://github.com',
      { trailingPath: true },
      { owner: 'acme', repo: 'shop' },
    ],
    [
      'punctuation after a link in prose',
      'https://github.com/acme/shop).',
      'https://github.com',
      { trailingPath: true },
      { owner: 'acme', repo: 'shop' },
    ],
    ['a path on disk', '/srv/git/shop', 'https://github.com', {}, undefined],
    ['only an owner', 'https://github.com/acme', 'https://github.com', {}, undefined],
    ['a dot-dot name', 'https://github.com/acme/..', 'https://github.com', {}, undefined],
  ];
  it.each(cases)('%s', (_name, text, bases, options, expected) => {
    expect(parseRepoUrl(text, bases, options)).toEqual(expected);
  });
});

describe('parseRepoName and repoUrl', () => {
  it('reads owner/repo and nothing more', () => {
    expect(parseRepoName(' acme/shop ')).toEqual({ owner: 'acme', repo: 'shop' });
    expect(parseRepoName('acme/shop/extra')).toBeUndefined();
    expect(parseRepoName('acme')).toBeUndefined();
    expect(parseRepoName('acme/sh op')).toBeUndefined();
  });
  it('builds the session repo string on the host, and compares names case-insensitively', () => {
    expect(repoUrl('https://github.com/', { owner: 'acme', repo: 'shop' })).toBe('https://github.com/acme/shop');
    expect(repoUrl(ghe, { owner: 'acme', repo: 'shop' })).toBe('https://ghe.acme.test/git/acme/shop');
    expect(sameRepo({ owner: 'Acme', repo: 'Shop' }, { owner: 'acme', repo: 'shop' })).toBe(true);
  });
});
