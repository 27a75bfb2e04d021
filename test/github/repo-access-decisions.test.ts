import { describe, expect, it } from 'vitest';
import { decideRepoAccess, type RepoAccessFacts } from '../../integrations/github/github-repo-access.ts';
import { checkRepoAccess, type RepoAccess } from '../../src/core/repo-access.ts';

const home = { repo: 'octo-org/public', installation: 77 };
const base: RepoAccessFacts = {
  repo: 'victim-org/secret',
  installation: 88,
  home,
  who: 'Alice',
  login: undefined,
  role: undefined,
};

/** Issue 36: who may have work done on a repository a session touches, from what GitHub says. */
describe('decideRepoAccess', () => {
  const cases: { name: string; facts: Partial<RepoAccessFacts>; allowed: boolean; says?: string }[] = [
    {
      name: 'a repository the App is not installed on, whoever asks',
      facts: { installation: undefined, login: 'alice', role: { role: 'admin', writes: true } },
      allowed: false,
      says: 'the GitHub App is not installed on victim-org/secret',
    },
    {
      name: 'a known login with write access, in another installation',
      facts: { login: 'alice', role: { role: 'write', writes: true } },
      allowed: true,
    },
    {
      name: 'a known login with maintain or admin',
      facts: { login: 'alice', role: { role: 'maintain', writes: true } },
      allowed: true,
    },
    {
      name: 'a known login that can only read, in the same installation',
      facts: { installation: 77, login: 'alice', role: { role: 'read', writes: false } },
      allowed: false,
      says: 'Alice (@alice on GitHub) has no write access to victim-org/secret (their permission there is read)',
    },
    {
      name: 'a known login with no permission at all',
      facts: { login: 'alice', role: { role: 'none', writes: false } },
      allowed: false,
      says: 'their permission there is none',
    },
    {
      name: 'an unknown login, in the installation of the repository the request named',
      facts: { installation: 77 },
      allowed: true,
    },
    {
      name: 'an unknown login, in another installation',
      facts: {},
      allowed: false,
      says: 'victim-org/secret is outside the GitHub App installation of octo-org/public',
    },
    {
      name: 'an unknown login whose request named a repository on no installation',
      facts: { home: { repo: 'octo-org/public', installation: undefined } },
      allowed: false,
      says: 'outside the GitHub App installation',
    },
  ];
  for (const c of cases)
    it(`${c.allowed ? 'allows' : 'refuses'} ${c.name}`, () => {
      const decision = decideRepoAccess({ ...base, ...c.facts });
      expect(decision.allowed).toBe(c.allowed);
      if (c.says) expect(decision.allowed === false && decision.reason).toContain(c.says);
    });
});

describe('checkRepoAccess', () => {
  const question = {
    requester: { source: 'slack' as const, id: 'U1', name: 'Alice' },
    repo: 'https://example.test/a/b',
    home: 'https://example.test/a/b',
    signal: new AbortController().signal,
  };
  const checker = (name: string, answer: Awaited<ReturnType<RepoAccess['check']>>): RepoAccess => ({
    name,
    check: async () => answer,
  });

  it('takes the first checker that knows the repository', async () => {
    const refused = { allowed: false as const, reason: 'no' };
    expect(
      await checkRepoAccess(
        [checker('other', undefined), checker('github', refused), checker('x', { allowed: true })],
        question,
      ),
    ).toEqual(refused);
  });

  it('allows a repository no checker gives credentials for (nothing of theirs reaches it)', async () => {
    expect(await checkRepoAccess([checker('github', undefined)], question)).toEqual({ allowed: true });
  });
});
