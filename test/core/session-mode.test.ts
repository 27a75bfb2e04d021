import { describe, expect, it } from 'vitest';
import { linkAnswer, referencedPaths, repoWebUrl } from '../../src/core/answer-links.ts';
import { classifyRequest, forcedMode, nextMode } from '../../src/core/session-mode.ts';

describe('whether a request asks or orders', () => {
  it.each([
    ['where is the retry policy set in https://github.com/acme/shop?', 'ask', 'router'],
    ['How does the cache get invalidated?', 'ask', 'router'],
    ['explain the release process', 'ask', 'router'],
    ['How do I fix the flaky login test?', 'ask', 'router'],
    ['what calls `parseConfig`', 'ask', 'router'],
    ['fix the typo in the README', 'do', 'router'],
    ['Can you add a health check to https://github.com/acme/api?', 'do', 'router'],
    ['Why does the build fail? Fix it please.', 'do', 'router'],
    ['the login page is broken on Safari', 'do', 'router'],
    ['Do it', 'do', 'router'],
    ['@patchbay can you take this one?', 'do', 'router'],
    ['Ada mentioned you on issue OPS-7. Their request:\n\n@patchbay can you take this one?', 'do', 'router'],
    ['could you explain how the retry works?', 'ask', 'router'],
    ['Can you tell me where the retry policy is set?', 'ask', 'router'],
    ['where is the title set?\n\nIssue #7 by bob, quoted:\n> Fix the title\n> It is wrong.', 'ask', 'router'],
    ['Do a slow thing', 'do', 'router'],
    ['does the cache expire?', 'ask', 'router'],
    ['ask: add a retry to the uploader?', 'ask', 'requester'],
    ['@patchbay do: where is the retry policy set?', 'do', 'requester'],
    ['https://github.com/acme/shop/blob/main/a.ts?plain=1 is wrong, rewrite it', 'do', 'router'],
  ])('%s → %s (%s)', (text, mode, source) => {
    expect(classifyRequest(text)).toMatchObject({ mode, source });
  });

  it('reads "ask:" and "do:" only as the first word', () => {
    expect(forcedMode('ask: why')).toBe('ask');
    expect(forcedMode('DO — fix it')).toBe('do');
    expect(forcedMode('please ask: the team')).toBeUndefined();
    expect(forcedMode('ask:')).toBeUndefined();
  });
});

describe('the mode after people’s messages', () => {
  const asked = { mode: 'ask', source: 'router', reason: 'r' } as const;
  it.each([
    [undefined, ['where is X set?'], 'ask'],
    [undefined, ['where is X set?', 'now fix it'], 'do'],
    [asked, ['fix it'], 'do'],
    [asked, ['ok, go ahead and change it to 5'], 'do'],
    [asked, ['do: whatever you think'], 'do'],
    [asked, ['and where is it read?'], undefined],
    [asked, ['thanks!'], undefined],
    [{ mode: 'do', source: 'router', reason: 'r' } as const, ['where is it read?'], undefined],
  ] as const)('%j + %j → %s', (current, messages, expected) => {
    expect(nextMode(current, messages)?.mode).toBe(expected);
  });
});

describe('file references in an answer', () => {
  const options = {
    exists: new Set(['src/retry.ts', 'README.md']),
    repoWeb: 'https://github.com/acme/shop',
    commit: 'abc123',
  };
  it('links existing paths at the commit and lines, and leaves the rest', () => {
    const answer =
      'Set in `src/retry.ts:12-20`, read in src/retry.ts#L3, see README.md; not in `src/gone.ts:1` or https://x.test/src/retry.ts.';
    expect(linkAnswer(answer, options)).toBe(
      'Set in [src/retry.ts:12-20](https://github.com/acme/shop/blob/abc123/src/retry.ts#L12-L20), read in [src/retry.ts:3](https://github.com/acme/shop/blob/abc123/src/retry.ts#L3), see [README.md](https://github.com/acme/shop/blob/abc123/README.md); not in `src/gone.ts:1` or https://x.test/src/retry.ts.',
    );
    expect(referencedPaths(answer)).toEqual(['src/retry.ts', 'README.md', 'src/gone.ts']);
  });
  it('has a web address only for http(s) repositories', () => {
    expect(repoWebUrl('https://github.com/acme/shop.git')).toBe('https://github.com/acme/shop');
    expect(repoWebUrl('/srv/repos/shop')).toBeUndefined();
    expect(repoWebUrl('git@github.com:acme/shop')).toBeUndefined();
  });
});
