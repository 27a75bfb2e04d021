import { describe, expect, it } from 'vitest';
import { runChaosSessions } from '../helpers/chaos-sessions.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * Three sessions end to end, one from each surface (a Slack mention, a mention on a GitHub issue,
 * a Linear issue delegated to the app; a GitHub PR out of each; the model behind the loopback
 * Anthropic API; configured from the environment), while the fakes inject their transient faults
 * at a fifth of requests. Chaos decides per subject, so seed 1779 gives each session the same
 * faults however they interleave: the Slack session's first model call is a 529 overloaded and the
 * answer to its first Slack post is lost; the GitHub session's first issue comment is made and its
 * answer lost; the Linear session's first activity gets a 503 and its second model call a 429;
 * besides other faults. Each still ends with one PR, its link posted once where it was asked, and
 * no duplicate post, comment, activity or commit.
 */
describe('sessions under chaos', () => {
  it('end correctly from Slack, GitHub and Linear while every service injects its transient faults', {
    timeout: 300_000,
  }, async () => {
    const run = await runChaosSessions({ sessions: 3, chaos: { rate: 0.2, seed: 1779 }, database: createTestDatabase });
    expect(run.outcomes.map((o) => [o.surface, o.problems])).toEqual([
      ['slack', []],
      ['github', []],
      ['linear', []],
    ]);
    const own = (service: string, subject: string) =>
      run.injected.filter((f) => f.service === service && f.subject === subject).map((f) => `${f.operation} ${f.kind}`);
    expect(own('anthropic', 'task-0')[0]).toBe('messages overloaded');
    expect(own('slack', 'C0CHAOS000')).toContain('chat.postMessage drop-after-accept');
    expect(own('github', 'octo-org/web-1')).toContain('issues/create-comment drop-after-accept');
    expect(own('linear', 'as-chaos-2')[0]).toBe('createAgentActivity,AgentActivityPayload unavailable');
    expect(own('anthropic', 'task-2')).toContain('messages rate-limited');
    expect(run.refused).toEqual([]);
  });
});
