import { describe, expect, it } from 'vitest';
import { runChaosSessions } from '../helpers/chaos-sessions.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * Two sessions end to end (Slack in, a GitHub PR out, the model behind the loopback Anthropic API,
 * configured from the environment) while the fakes inject their transient faults at a fifth of
 * requests. Seed 288 makes the first model calls a 429 and two 529 overloaded answers and drops the answer to the
 * second Slack post, besides other Slack and GitHub faults: each session still ends with one PR, its link posted once, and no
 * duplicate post, comment or commit.
 */
describe('sessions under chaos', () => {
  it('end correctly while every service injects its transient faults', { timeout: 300_000 }, async () => {
    const run = await runChaosSessions({ sessions: 2, chaos: { rate: 0.2, seed: 288 }, database: createTestDatabase });
    expect(run.outcomes.map((o) => o.problems)).toEqual([[], []]);
    const services = new Set(run.injected.map((f) => f.service));
    expect(services).toContain('anthropic');
    expect(services).toContain('slack');
    expect(run.injected.filter((f) => f.service === 'anthropic').map((f) => f.kind)).toEqual(
      expect.arrayContaining(['rate-limited', 'overloaded']),
    );
    expect(run.injected).toContainEqual({ service: 'slack', operation: 'chat.postMessage', kind: 'drop-after-accept' });
    expect(run.refused).toEqual([]);
  });
});
