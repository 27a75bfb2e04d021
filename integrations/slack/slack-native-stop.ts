import type { Interpretation } from '../../src/core/delivery-interpreter.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { SlackErrand, SlackRequestDeps } from './slack-interpreter.ts';
import type { AgentSessionStopped } from './slack-payloads.ts';
import type { SlackThread } from './slack-store.ts';

/**
 * Slack's native Stop on a thread's agent session: a stop for the thread's session, whatever it is
 * doing, queued or starting included (the session service cancels it where it stands; a run not
 * begun never begins). Slack shows the button from the first reply on, while the session may still
 * wait in line, so the stop must work then too. A thread with nothing running hears so.
 */
export async function nativeStop(
  deps: Pick<SlackRequestDeps, 'actors'>,
  teamId: string,
  event: AgentSessionStopped,
): Promise<Interpretation<SlackErrand>> {
  const thread: SlackThread = { source: 'slack', teamId, channel: event.channel, threadTs: event.thread_ts };
  const actor = await deps.actors.get(event.user);
  const key = `not-running:${event.event_ts ?? `${event.thread_ts}:stop`}`;
  return {
    kind: 'inbound',
    inbound: { kind: 'stop', thread, actor },
    errand: { kind: 'say-not-running', thread, key },
  };
}

/** The choices the agent offered with a question, from the session's log. */
export async function questionChoices(
  context: Pick<IntegrationContext, 'sessions'>,
  sessionId: string,
  questionId: string,
): Promise<string[] | undefined> {
  for (const { event } of await context.sessions.events(sessionId, { types: ['question-asked'] })) {
    if (event.type === 'question-asked' && event.questionId === questionId) return event.choices;
  }
  return undefined;
}
