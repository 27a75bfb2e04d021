import { describe, expect, it } from 'vitest';
import {
  isActive,
  isTerminal,
  nextStatus,
  type SessionStatus,
  type SessionTrigger,
} from '../../src/core/session-status.ts';

describe('session status transitions', () => {
  const rows: [SessionStatus, SessionTrigger, SessionStatus | undefined][] = [
    ['queued', 'start', 'running'],
    ['queued', 'enqueue', 'queued'],
    ['queued', 'cancel', 'cancelled'],
    ['queued', 'ask', undefined],
    ['queued', 'finish', undefined],
    ['running', 'ask', 'waiting'],
    ['running', 'finish', 'completed'],
    ['running', 'fail', 'failed'],
    ['running', 'cancel', 'cancelled'],
    ['running', 'enqueue', 'running'],
    ['running', 'start', 'running'],
    ['waiting', 'enqueue', 'queued'],
    ['waiting', 'cancel', 'cancelled'],
    ['waiting', 'start', undefined],
    ['waiting', 'finish', undefined],
    ['completed', 'enqueue', 'queued'],
    ['completed', 'cancel', undefined],
    ['completed', 'start', undefined],
    ['failed', 'enqueue', 'queued'],
    ['failed', 'finish', undefined],
    ['cancelled', 'enqueue', 'queued'],
    ['cancelled', 'cancel', undefined],
    ['cancelled', 'start', undefined],
  ];
  it.each(rows)('%s + %s → %s', (from, trigger, to) => {
    expect(nextStatus(from, trigger)).toBe(to);
  });

  it('names the terminal and active statuses', () => {
    expect((['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'] as const).filter(isTerminal)).toEqual([
      'completed',
      'failed',
      'cancelled',
    ]);
    expect((['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'] as const).filter(isActive)).toEqual([
      'queued',
      'running',
    ]);
  });
});
