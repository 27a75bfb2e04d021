import type { StoredEvent } from '../../src/core/events.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import {
  type AgentStatus,
  type SlackAgentSurface,
  STREAM_ROLLOVER_MS,
  type StreamRecipient,
} from './slack-agent-surface.ts';
import type { SlackThread } from './slack-store.ts';

/** What a thread's agent surface shows, kept between replies in the replier's state. */
export type AgentState = {
  /** The session status last set; undefined before the first. */
  status?: AgentStatus;
  /** Slack's native Stop reaches Patchbay: the status message then goes without its own Stop button. */
  nativeStop?: boolean;
  /** The open stream of the agent's words, while one is. */
  stream?: { ts: string; startedAt: number };
  /** A plan-first session before its go: its words are the plan, asked as a question, not streamed. */
  planFirst?: boolean;
  /** Whom the thread's streams are for: the person who asked. */
  recipient?: StreamRecipient;
};

/** The agent-session status a Patchbay session shows: working, waiting on a person, or done. */
export function agentStatusOf(status: SessionRecord['status']): AgentStatus {
  if (status === 'queued' || status === 'running') return 'processing';
  if (status === 'waiting') return 'suspended';
  return 'active';
}

/**
 * Brings the thread's agent surface up to a batch of events: the agent's words streamed into the
 * thread as it says them, the session status (`processing` from the first reply on, while the run
 * is still queued, so Slack's Stop works before a sandbox or a run exists; `suspended` while a
 * question or approval waits) and the status line with the current step. The end of a run is
 * finishAgentReply's. Returns the state to keep; unchanged when Slack has no agent surface.
 */
export async function syncAgentSurface(
  surface: SlackAgentSurface,
  input: { thread: SlackThread; session: SessionRecord; step: string; events: readonly StoredEvent[]; now: number },
  previous: AgentState | undefined,
): Promise<AgentState | undefined> {
  if (!surface.available) return previous;
  const { thread, session, now } = input;
  const state: AgentState = { ...previous };
  const recipient = state.recipient ?? recipientOf(input.events, thread);
  if (recipient) state.recipient = recipient;
  const done = agentStatusOf(session.status) === 'active';
  for (const words of wordsToStream(input.events, state)) {
    if (!done && state.recipient) await streamWords(surface, thread, state, `${words}\n\n`, now);
  }
  const wanted = agentStatusOf(session.status);
  if (wanted !== 'active' && wanted !== state.status) {
    if (wanted === 'suspended' && state.stream) {
      await surface.stopStream(thread, state.stream.ts, '', 'suspended');
      delete state.stream;
      state.status = 'suspended';
    } else {
      const set = await surface.setStatus(thread, wanted, state.status ? undefined : creation(input.events, state));
      if (set) state.nativeStop = set.stop;
      if (set) state.status = wanted;
    }
  }
  if (wanted === 'processing' && surface.available) await surface.setLine(thread, plainStep(input.step));
  return surface.available ? state : { ...state, nativeStop: false };
}

/**
 * The reply that ends a run, streamed as a message of its own (so it notifies like one), after the
 * stream of the agent's words is closed; the stop leaves the thread's session `active`. Its ts, or
 * undefined when it must be posted instead (no agent surface, no requester to stream to, a stream
 * Slack refused), the session then set `active` on its own.
 */
export async function finishAgentReply(
  surface: SlackAgentSurface,
  thread: SlackThread,
  state: AgentState | undefined,
  text: string,
): Promise<string | undefined> {
  if (!surface.available || !state) return undefined;
  // Closed already when Slack ended it (its lifetime, or the person's Stop): nothing to do then.
  if (state.stream) await surface.stopStream(thread, state.stream.ts, '');
  delete state.stream;
  const ts = state.recipient && (await surface.startStream(thread, slackToMarkdown(text), state.recipient));
  if (!ts) {
    // Posted instead; the thread's session must not stay `processing` with a Stop for nothing.
    if (state.status && (await surface.setStatus(thread, 'active'))) state.status = 'active';
    return undefined;
  }
  // The reply is in the thread once the stream started; the status is the stop's extra.
  if (await surface.stopStream(thread, ts, '', 'active')) state.status = 'active';
  return ts;
}

/** The agent's words into the open stream, or a new one (the first, or after Slack ended the last). */
async function streamWords(
  surface: SlackAgentSurface,
  thread: SlackThread,
  state: AgentState,
  text: string,
  now: number,
): Promise<void> {
  const open = state.stream;
  if (open && now - open.startedAt < STREAM_ROLLOVER_MS && (await surface.appendStream(thread, open.ts, text))) return;
  if (open && now - open.startedAt >= STREAM_ROLLOVER_MS) await surface.stopStream(thread, open.ts, '');
  delete state.stream;
  const ts = await surface.startStream(thread, text, state.recipient!);
  if (ts) state.stream = { ts, startedAt: now };
}

/**
 * The agent's words in a batch, but not those a question repeats: a plan-first session's words
 * before its go are its plan, which the thread gets as the question asking for the go.
 */
function wordsToStream(events: readonly StoredEvent[], state: AgentState): string[] {
  const words: string[] = [];
  for (const { event } of events) {
    if (event.type === 'autonomy-set') state.planFirst = event.level === 'plan-first';
    if (event.type === 'plan-approved') state.planFirst = false;
    const text = event.type === 'assistant-message' && !state.planFirst ? event.text.trim() : '';
    if (text) words.push(text);
  }
  return words;
}

/** The person who asked (the first Slack user's message), whom a stream in a channel is for. */
function recipientOf(events: readonly StoredEvent[], thread: SlackThread): StreamRecipient | undefined {
  for (const { event } of events) {
    if (event.type === 'user-message' && event.actor.source === 'slack')
      return { userId: event.actor.id, teamId: thread.teamId };
  }
  return undefined;
}

/** The session's title (the request's first line) and who started it, for the first status. */
function creation(events: readonly StoredEvent[], state: AgentState): { title: string; initiator?: string } {
  const asked = events.find((e) => e.event.type === 'user-message')?.event;
  const first = asked?.type === 'user-message' ? asked.text.split('\n')[0]!.trim() : '';
  return { title: first || 'Patchbay session', ...(state.recipient && { initiator: state.recipient.userId }) };
}

/** A status-message step (mrkdwn) as the plain words of a status line. */
function plainStep(step: string): string {
  return slackToMarkdown(step).replace(/`/g, '').slice(0, 200);
}

/** Slack mrkdwn (`<url|text>` links, escaped &, <, >) as the markdown a stream takes. */
export function slackToMarkdown(text: string): string {
  return text
    .replace(/<((?:https?|mailto):[^|>]+)\|([^>]+)>/g, '[$2]($1)')
    .replace(/<((?:https?|mailto):[^>]+)>/g, '$1')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}
