import type { RunLog, TransitionResult } from '../core/run-log.ts';
import { harnessQuestionCall } from './gates/harness-messages.ts';

/**
 * The model service kept failing in a way that passes (overloaded, rate limited, unreachable)
 * through every retry the call's deadline allowed: the session pauses with the reason and asks,
 * instead of failing. Its work so far stays (transcript, workspace, branch); an answer other than
 * "Stop" runs the agent again from where it was.
 */
export async function pauseForModel(sessionId: string, reason: string, store: RunLog): Promise<TransitionResult> {
  const question = `The model service is still not answering (${reason}). I have paused here with the work so far kept. Reply "Try again" when it is back, or "Stop".`;
  const choices = ['Try again', 'Stop'];
  const asked = await store.events(sessionId, { types: ['question-asked'] });
  const questionId = `model-down:${asked.length + 1}`;
  return store.transition(sessionId, 'ask', {
    reason: 'paused: the model service is not answering',
    patch: {
      pendingQuestion: { questionId, toolCallId: harnessQuestionCall, question, choices, recommended: 'Try again' },
    },
    events: [{ event: { type: 'question-asked', questionId, question, choices, recommended: 'Try again' } }],
    unlessUnread: true,
  });
}
