import type { Actor } from '../core/actor.ts';
import { isGo } from '../core/autonomy.ts';
import type { EventOf, StoredEvent } from '../core/events.ts';
import type { RunLog, TransitionResult } from '../core/run-log.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { isHuman } from './gates/harness-messages.ts';

/** A plan question carries this tool-call id: no ask_user call waits on it, and it is not a gate's question. */
export const planQuestionCall = 'plan';

/** What the thread is asked under the plan. */
export const PLAN_PROMPT = 'Reply go to start, or say what to change.';

type UserMessage = StoredEvent & { event: EventOf<'user-message'> };

/** Whether the session's go was given: a `plan-approved` event is in its log (durable over restarts). */
export async function planApproved(store: Pick<RunLog, 'events'>, sessionId: string): Promise<boolean> {
  return (await store.events(sessionId, { types: ['plan-approved'] })).length > 0;
}

/**
 * The agent finished a turn with its plan while the session waits for its go: the plan goes to the
 * thread as a question and the session waits, as for any question. No commit, no push.
 */
export async function askForGo(
  store: Pick<RunLog, 'events' | 'transition'>,
  session: SessionRecord,
  plan: string,
): Promise<TransitionResult> {
  const asked = await store.events(session.id, { types: ['question-asked'] });
  const plans = asked.filter((e) => e.event.type === 'question-asked' && e.event.questionId.startsWith('plan:'));
  const questionId = `plan:${plans.length + 1}`;
  const question = `${plan.trim() || 'The agent has no plan to show yet.'}\n\n${PLAN_PROMPT}`;
  return store.transition(session.id, 'ask', {
    reason: 'waiting for a go to the plan',
    patch: { pendingQuestion: { questionId, toolCallId: planQuestionCall, question, choices: ['Go'] } },
    events: [{ event: { type: 'question-asked', questionId, question, choices: ['Go'] }, dedupeKey: questionId }],
    unlessUnread: true,
  });
}

/**
 * A resumed plan-first run whose plan was answered: a "go" from someone who may give it records
 * `plan-approved`, which unlocks the tools; any other reply is feedback the agent reads as a
 * message and answers with a revised plan. Either way the question is closed. Nothing happens
 * while no one has answered.
 */
export async function answerPlan(store: Pick<RunLog, 'get' | 'events' | 'commitStep'>, sessionId: string) {
  const session = await store.get(sessionId);
  const question = session?.pendingQuestion;
  if (!session || question?.toolCallId !== planQuestionCall) return;
  const events = await store.events(sessionId);
  const asked = events.findLast((e) => e.event.type === 'question-asked' && e.event.questionId === question.questionId);
  const replies = events.filter(
    (e): e is UserMessage => e.seq > (asked?.seq ?? 0) && e.event.type === 'user-message' && isHuman(e.event.actor),
  );
  if (replies.length === 0) return;
  const go = replies.find((r) => isGo(r.event.text) && mayGiveGo(session, r.event.actor));
  await store.commitStep(sessionId, {
    events: [
      ...replies.map((r) => ({
        event: {
          type: 'question-answered' as const,
          questionId: question.questionId,
          actor: r.event.actor,
          text: r.event.text,
        },
        dedupeKey: `answer:${r.seq}`,
      })),
      ...(go
        ? [
            {
              event: { type: 'plan-approved' as const, questionId: question.questionId, actor: go.event.actor },
              dedupeKey: `plan-approved:${question.questionId}`,
            },
          ]
        : []),
    ],
    patch: { pendingQuestion: null },
  });
}

/**
 * Who may say go: the requester, or a person their surface vouches for (on GitHub only people with
 * write access reach a session; the web page and the CLI are the operator's). Anyone else's "go"
 * is a message the agent reads.
 */
function mayGiveGo(session: SessionRecord, actor: Actor): boolean {
  if (session.requester.source === actor.source && session.requester.id === actor.id) return true;
  return actor.source === 'github' || actor.source === 'web' || actor.source === 'cli';
}
