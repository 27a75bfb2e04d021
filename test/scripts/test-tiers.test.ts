import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testTier, testTiers } from '../tiers.ts';

const repo = join(import.meta.dirname, '../..');
const tierOf = (file: string) => testTier(repo, join(repo, file));

describe('the test tiers', () => {
  it('puts each test file in exactly one tier', () => {
    const tiers = Object.values(testTiers(repo));
    const all = tiers.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all).toContain('test/scripts/test-tiers.test.ts');
    for (const files of tiers) expect(files.length).toBeGreaterThan(10);
  });

  it('decides by what a file loads: the whole app, processes and servers, or neither', () => {
    expect(tierOf('test/core/repo-ref.test.ts')).toBe('unit');
    expect(tierOf('test/sessions/session-store.test.ts')).toBe('unit');
    // A queue test on the run's PostgreSQL: waitFor's helper file imports only a type from the app.
    expect(tierOf('test/sessions/event-bus.test.ts')).toBe('unit');
    expect(tierOf('test/git/mirror.test.ts')).toBe('integration');
    expect(tierOf('test/sandbox/local-sandbox-exec.test.ts')).toBe('integration');
    expect(tierOf('test/models/anthropic-provider.test.ts')).toBe('integration');
    expect(tierOf('test/e2e/slack-to-github.test.ts')).toBe('e2e');
    expect(tierOf('test/web/session-page.test.ts')).toBe('e2e');
  });
});
