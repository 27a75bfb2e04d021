import { describe, expect, it } from 'vitest';
import { mirrorPath, normalizeRepo, resolveRepo } from '../../src/git/mirror.ts';

describe('resolveRepo', () => {
  it.each([
    ['https://github.com/acme/app.git', { kind: 'url', location: 'https://github.com/acme/app.git' }],
    ['git@github.com:acme/app.git', { kind: 'url', location: 'git@github.com:acme/app.git' }],
    ['ssh://git@github.com/acme/app', { kind: 'url', location: 'ssh://git@github.com/acme/app' }],
    ['file:///srv/repos/app.git', { kind: 'path', location: '/srv/repos/app.git' }],
    ['/srv/repos/app', { kind: 'path', location: '/srv/repos/app' }],
    ['  /srv/repos/app  ', { kind: 'path', location: '/srv/repos/app' }],
  ])('%j', (repo, expected) => {
    expect(resolveRepo(repo)).toEqual(expected);
  });

  it('makes a relative path absolute', () => {
    expect(resolveRepo('repos/app')).toEqual({ kind: 'path', location: `${process.cwd()}/repos/app` });
  });
});

describe('one mirror per repository', () => {
  const same: [string, string][] = [
    ['https://github.com/acme/app', 'https://github.com/acme/app.git'],
    ['https://github.com/acme/app', 'https://GitHub.com/acme/app/'],
    ['https://github.com/acme/app', 'https://x-access-token:ghs_secret@github.com/acme/app.git'],
    ['git@github.com:acme/app.git', 'git@GITHUB.COM:acme/app'],
    ['/srv/repos/app', '/srv/repos/app/'],
    ['/srv/repos/app', 'file:///srv/repos/app'],
  ];
  it.each(same)('%s ≡ %s', (a, b) => {
    expect(mirrorPath('/data', resolveRepo(a))).toBe(mirrorPath('/data', resolveRepo(b)));
  });

  const different: [string, string][] = [
    ['https://github.com/acme/app', 'https://github.com/acme/app2'],
    ['https://github.com/acme/app', 'https://github.com/Acme/App'],
    ['https://github.com/acme/app', 'https://ghe.example.com/acme/app'],
  ];
  it.each(different)('%s ≢ %s', (a, b) => {
    expect(mirrorPath('/data', resolveRepo(a))).not.toBe(mirrorPath('/data', resolveRepo(b)));
  });

  it('names the mirror by a 16-hex-digit hash under <dataDir>/mirrors and keeps credentials out of the key', () => {
    expect(mirrorPath('/data', resolveRepo('https://github.com/acme/app'))).toMatch(
      /^\/data\/mirrors\/[0-9a-f]{16}\.git$/,
    );
    expect(normalizeRepo(resolveRepo('https://user:pw@github.com/acme/app.git'))).toBe('https://github.com/acme/app');
  });
});
