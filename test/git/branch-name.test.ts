import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { branchName, isValidBranchName } from '../../src/git/branch-name.ts';

describe('branchName', () => {
  it.each([
    ['3f2a9c1e-7b4d-4e1a-9c2f-1a2b3c4d5e6f', 'Fix the login redirect', 'patchbay/3f2a9c1e-fix-the-login-redirect'],
    ['abc', 'Add dark mode', 'patchbay/abc-add-dark-mode'],
    ['3f2a9c1e7b4d', 'Crème brûlée: über-fix!', 'patchbay/3f2a9c1e-creme-brulee-uber-fix'],
    ['3f2a9c1e', '  ../..//refs@{x}.lock  ', 'patchbay/3f2a9c1e-refs-x-lock'],
    ['3f2a9c1e', '日本語だけ', 'patchbay/3f2a9c1e'],
    ['3f2a9c1e', '', 'patchbay/3f2a9c1e'],
    [
      '3f2a9c1e',
      'Refactor the session worker so that retries back off exponentially',
      'patchbay/3f2a9c1e-refactor-the-session-worker-so-that',
    ],
    ['3f2a9c1e', 'a'.repeat(60), `patchbay/3f2a9c1e-${'a'.repeat(40)}`],
    ['3F-2A_9C/1E..', 'X', 'patchbay/3f2a9c1e-x'],
    ['---', 'title', 'patchbay/session-title'],
  ])('(%j, %j) → %s', (id, title, expected) => {
    const name = branchName(id, title);
    expect(name).toBe(expected);
    expect(isValidBranchName(name)).toBe(true);
  });

  it.each([
    ['fix/', 'fix/3f2a9c1e-fix-the-login-redirect'],
    ['feature/', 'feature/3f2a9c1e-fix-the-login-redirect'],
    // A prefix git would refuse falls back to Patchbay's own.
    ['bad..x/', 'patchbay/3f2a9c1e-fix-the-login-redirect'],
  ])("under the repository's learned prefix %j (issue 40) → %s", (prefix, expected) => {
    expect(branchName('3f2a9c1e-7b4d', 'Fix the login redirect', prefix)).toBe(expected);
  });

  it('keeps the slug at most 40 characters', () => {
    const name = branchName('12345678', 'word '.repeat(30));
    expect(name.length - 'patchbay/12345678-'.length).toBeLessThanOrEqual(40);
  });
});

describe('isValidBranchName agrees with git check-ref-format --branch', () => {
  const names = [
    'main',
    'patchbay/abc-fix',
    'feature/x.y',
    'a-b_c',
    '',
    '-leading-dash',
    'has space',
    'double..dot',
    'ends.',
    'ends/',
    '/starts',
    'a//b',
    'x.lock',
    'a/x.lock/b',
    'a/.hidden',
    '.hidden',
    'tilde~1',
    'caret^',
    'colon:x',
    'q?',
    'star*',
    'brack[et',
    'back\\slash',
    'at@{brace',
    'tab\tx',
    'del\x7f',
    'ümlaut',
  ];
  it.each(names)('%j', (name) => {
    let gitSays: boolean;
    try {
      execFileSync('git', ['check-ref-format', '--branch', name], { stdio: 'ignore', cwd: '/' });
      gitSays = true;
    } catch {
      gitSays = false;
    }
    expect(isValidBranchName(name)).toBe(gitSays);
  });
});

describe('isValidBranchName is stricter than git for revision shorthands', () => {
  it.each(['@', 'HEAD'])('refuses %j', (name) => {
    expect(isValidBranchName(name)).toBe(false);
  });
});
