import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/events.ts';
import { factsOf } from '../../src/sessions/store/session-facts.ts';
import { verdict } from '../helpers/scripted-verifier.ts';

const t0 = new Date('2026-03-01T00:00:00Z');
const at = (s: number) => new Date(t0.getTime() + s * 1000);
const usage = (model: string, tokens: number): SessionEvent => ({
  type: 'usage',
  turn: 0,
  model,
  inputTokens: tokens,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});
const scores = (v: ReturnType<typeof verdict>) => ({
  relevance: v.relevance,
  completeness: v.completeness,
  correctness: v.correctness,
  scope: v.scope,
});
const session = { id: 's1', createdAt: t0, repo: 'https://github.com/o/r' };

describe('a session folded into its facts', () => {
  it('surface, class, the model with most tokens, the last verdict, reworks, questions, first reply, time to PR and wall time', () => {
    const first = verdict([2, 1, 1, 2], 'first');
    const last = verdict([2, 2, 1, 2], 'last');
    const events: { event: SessionEvent; at: Date }[] = [
      {
        event: {
          type: 'session-created',
          repo: session.repo,
          prompt: 'p',
          actor: { source: 'slack', id: 'U1', name: 'a' },
          thread: { source: 'slack', teamId: 'T', channel: 'C', threadTs: '1.2' },
        },
        at: at(0),
      },
      { event: { type: 'task-routed', taskClass: 'multi-file', reason: 'r', maxCostUsd: 1, maxMinutes: 1 }, at: at(1) },
      { event: usage('model-a', 100), at: at(2) },
      { event: { type: 'question-asked', questionId: 'q', question: 'which?' }, at: at(3) },
      { event: usage('model-b', 300), at: at(4) },
      {
        event: {
          type: 'check-finished',
          commit: 'c',
          phase: 'check',
          name: 'test',
          command: 'npm test',
          outcome: 'failed',
          exitCode: 1,
          durationMs: 1,
          logHead: '',
          logTail: '',
        },
        at: at(5),
      },
      {
        event: {
          type: 'verification-finished',
          commit: 'c',
          attempt: 1,
          outcome: 'failed',
          total: 6,
          scores: scores(first),
          summary: 'first',
        },
        at: at(6),
      },
      {
        event: {
          type: 'check-finished',
          commit: 'd',
          phase: 'check',
          name: 'test',
          command: 'npm test',
          outcome: 'passed',
          exitCode: 0,
          durationMs: 1,
          logHead: '',
          logTail: '',
        },
        at: at(7),
      },
      {
        event: {
          type: 'verification-finished',
          commit: 'd',
          attempt: 2,
          outcome: 'passed',
          total: 7,
          scores: scores(last),
          summary: 'last',
        },
        at: at(8),
      },
      {
        event: { type: 'pr-opened', url: 'https://github.com/o/r/pull/1', number: 1, branch: 'b', commit: 'd' },
        at: at(9),
      },
      { event: { type: 'status-changed', from: 'running', to: 'completed' }, at: at(10) },
    ];
    expect(factsOf(session, events, null)).toMatchObject({
      surface: 'slack',
      taskClass: 'multi-file',
      model: 'model-b',
      tokens: 400,
      costUsd: null,
      checksPassed: 1,
      checksFailed: 1,
      verdict: { total: 7, scores: { relevance: 2, completeness: 2, correctness: 1, scope: 2 } },
      reworks: 1,
      questions: 1,
      firstReplyMs: 3000,
      toPrMs: 9000,
      wallMs: 10_000,
    });
  });

  it('a session that never ran: no model, unrouted, nothing timed', () => {
    expect(factsOf(session, [], null)).toMatchObject({
      surface: 'unknown',
      model: 'none',
      taskClass: 'unrouted',
      tokens: 0,
      costUsd: 0,
      verdict: null,
      reworks: 0,
      firstReplyMs: null,
      toPrMs: null,
      wallMs: null,
    });
  });
});
