import type { Logger } from 'pino';
import type { EventOf, StoredEvent } from '../core/events.ts';
import type { RunLog, SessionPatch, TransitionResult } from '../core/run-log.ts';
import type { GateQuestion } from './gates/run-gates.ts';
import { answerEndsSession, harnessQuestionCall, isHuman } from './gates/harness-messages.ts';

/**
 * Asks the thread what to do with a change the gates did not pass; the session waits for the
 * answer with the change's result already recorded.
 */
export function askAboutGate(
  store: RunLog,
  sessionId: string,
  ask: { questionId: string; question: GateQuestion; result: NonNullable<SessionPatch['result']> },
): Promise<TransitionResult> {
  const { questionId, question, result } = ask;
  return store.transition(sessionId, 'ask', {
    reason: 'waiting for a decision on a change the gates did not pass',
    patch: {
      result,
      pendingQuestion: {
        questionId,
        toolCallId: harnessQuestionCall,
        question: question.text,
        choices: question.choices,
        recommended: question.recommended,
      },
    },
    events: [
      {
        event: {
          type: 'question-asked',
          questionId,
          question: question.text,
          choices: question.choices,
          recommended: question.recommended,
        },
      },
    ],
    unlessUnread: true,
  });
}

/**
 * A question the harness asked (a budget pause, a change the gates did not pass) was answered.
 * "Stop" or "keep it as a draft" ends the session here; anything else goes on to the agent, which
 * reads the answer as a message. Returns true when the session ended.
 */
export async function answerHarnessQuestion(sessionId: string, store: RunLog, log: Logger): Promise<boolean> {
  const session = await store.get(sessionId);
  const question = session?.pendingQuestion;
  if (!session || !question || question.toolCallId !== harnessQuestionCall) return false;
  const events = await store.events(sessionId);
  const asked = events.findLast((e) => e.event.type === 'question-asked' && e.event.questionId === question.questionId);
  const answers = events.filter(
    (e) => e.seq > (asked?.seq ?? 0) && e.event.type === 'user-message' && isHuman(e.event.actor),
  ) as (StoredEvent & { event: EventOf<'user-message'> })[];
  const answer = answers.at(-1);
  if (!answer) return false;
  const ends = answerEndsSession(answer.event.text);
  const answered = {
    event: {
      type: 'question-answered' as const,
      questionId: question.questionId,
      actor: answer.event.actor,
      text: answer.event.text,
    },
    dedupeKey: `answer:${answer.seq}`,
  };
  if (!ends) {
    await store.commitStep(sessionId, { events: [answered], patch: { pendingQuestion: null } });
    return false;
  }
  log.info({ answer: answer.event.text }, 'the harness question was answered with a stop');
  // The answer joins the transcript (with the harness's acknowledgement), so it counts as read.
  const ack = /draft/i.test(answer.event.text)
    ? 'Keeping the pull request as a draft, as asked.'
    : 'Stopped, as asked.';
  await store.commitStep(sessionId, {
    messages: [
      {
        message: { role: 'user', content: `${answer.event.actor.name} answered: ${answer.event.text}` },
        eventSeq: answer.seq,
      },
      { message: { role: 'assistant', content: ack } },
    ],
    events: [answered],
    patch: { pendingQuestion: null },
  });
  await store.transition(sessionId, 'finish', { reason: ack, patch: { error: null }, unlessUnread: true });
  return true;
}
