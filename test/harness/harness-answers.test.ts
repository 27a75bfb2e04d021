import { describe, expect, it } from 'vitest';
import { answerEndsSession } from '../../src/harness/gates/harness-messages.ts';

/**
 * Answers to the harness's own questions ("Keep it as a draft, try another approach, or stop?",
 * a budget pause): which end the session and which go on to the agent (issue 35). An answer that
 * asks for more work goes on, however it starts.
 */
describe('an answer to a harness question', () => {
  it.each(['Stop', 'stop.', 'Keep it as a draft', 'keep as draft', 'Leave it', 'No', 'no, thanks', 'No, stop here'])(
    '%j ends the session',
    (text) => {
      expect(answerEndsSession(text)).toBe(true);
    },
  );

  it.each([
    'Stop, try again with the other library',
    'stop that and fix the test instead',
    'No, try another approach',
    'Try another approach',
    'continue',
    'no, keep going',
    'Keep it as a draft but retry the flaky test',
    'use the other library',
  ])('%j goes on to the agent', (text) => {
    expect(answerEndsSession(text)).toBe(false);
  });
});
