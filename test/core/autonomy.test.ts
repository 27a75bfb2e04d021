import { describe, expect, it } from 'vitest';
import { isGo, parseAutonomyPrefix, resolveAutonomy } from '../../src/core/autonomy.ts';
import { loadConfig } from '../../src/config.ts';

describe('the autonomy a session works under: session > repository > installation', () => {
  it.each([
    [{ installation: 'ask-risky' }, { level: 'ask-risky', source: 'installation' }],
    [
      { repository: 'full', installation: 'ask-risky' },
      { level: 'full', source: 'repository' },
    ],
    [
      { session: 'plan-first', repository: 'full', installation: 'ask-risky' },
      { level: 'plan-first', source: 'session' },
    ],
    [
      { session: 'ask-before-push', installation: 'full' },
      { level: 'ask-before-push', source: 'session' },
    ],
    [
      { session: undefined, repository: undefined, installation: 'full' },
      { level: 'full', source: 'installation' },
    ],
  ] as const)('%j → %j', (layers, expected) => {
    expect(resolveAutonomy(layers)).toEqual(expected);
  });
});

describe("the requester's words that set a session's autonomy", () => {
  it.each([
    ['plan first: add a health check', 'plan-first', 'add a health check'],
    ['Plan-first: add a health check', 'plan-first', 'add a health check'],
    ['plan first — add a health check', 'plan-first', 'add a health check'],
    ['@patchbay plan first: fix the build', 'plan-first', '@patchbay fix the build'],
    ['ask before push: bump the version', 'ask-before-push', 'bump the version'],
    ['Ask before pushing: bump the version', 'ask-before-push', 'bump the version'],
    ['full autonomy: tidy the README', 'full', 'tidy the README'],
    ['ask risky: tidy the README', 'ask-risky', 'tidy the README'],
    ['autonomy plan-first: tidy the README', 'plan-first', 'tidy the README'],
    ['autonomy=ask-before-push: tidy the README', 'ask-before-push', 'tidy the README'],
  ])('%j → %s, task %j', (text, level, task) => {
    expect(parseAutonomyPrefix(text)).toEqual({ autonomy: level, text: task });
  });

  it.each([
    'fix the bug: it crashes on start',
    'please plan first: then do it',
    'plan first:',
    'https://github.com/acme/widgets plan first: add it',
    'first plan: add it',
    'autonomy reckless: do it',
  ])('%j sets nothing and stays as it is', (text) => {
    expect(parseAutonomyPrefix(text)).toEqual({ text });
  });
});

describe('a reply that says go to a plan', () => {
  it.each(['go', 'Go', 'go ahead', 'Go!', 'ok, go', 'yes go', 'LGTM', 'approved', 'ship it'])('%j is a go', (text) => {
    expect(isGo(text)).toBe(true);
  });
  it.each(['go with option B instead', 'no', 'do not go yet', 'use a map instead of a list', ''])(
    '%j is feedback',
    (text) => {
      expect(isGo(text)).toBe(false);
    },
  );
});

describe('the installation autonomy from the environment', () => {
  const base = { MODEL_PROVIDER: 'scripted' };
  it('is ask-risky unless configured, so approvals are on by default', () => {
    expect(loadConfig(base).approvals.autonomy).toBe('ask-risky');
  });
  it('APPROVALS=off and AUTONOMY=full both turn it off', () => {
    expect(loadConfig({ ...base, APPROVALS: 'off' }).approvals.autonomy).toBe('full');
    expect(loadConfig({ ...base, AUTONOMY: 'full' }).approvals.autonomy).toBe('full');
    expect(loadConfig({ ...base, APPROVALS: 'on', AUTONOMY: 'plan-first' }).approvals.autonomy).toBe('plan-first');
  });
  it('refuses a contradiction and an unknown level with the variable named', () => {
    expect(() => loadConfig({ ...base, APPROVALS: 'off', AUTONOMY: 'ask-before-push' })).toThrow(/APPROVALS=off/);
    expect(() => loadConfig({ ...base, AUTONOMY: 'reckless' })).toThrow(/AUTONOMY/);
  });
});
