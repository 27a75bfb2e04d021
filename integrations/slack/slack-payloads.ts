import { z } from 'zod';

/**
 * The parts of Slack's payloads Patchbay reads, as zod schemas (wire-formats §1.4–1.6): what a
 * stored delivery's body is checked against before anything reads it. Unknown fields are dropped;
 * a payload missing what it must have is a clear refusal, not a cast that breaks later.
 */

/** A file on a message, as the event names it. */
export const SlackFile = z.object({
  id: z.string().min(1),
  name: z.string().optional(),
  mimetype: z.string().optional(),
  url_private: z.string().optional(),
  url_private_download: z.string().optional(),
});
export type SlackFile = z.infer<typeof SlackFile>;

/** A `message` or `app_mention` event (the fields Patchbay reads). */
export const SlackMessageEvent = z.object({
  type: z.string(),
  subtype: z.string().optional(),
  user: z.string().optional(),
  bot_id: z.string().optional(),
  text: z.string().optional(),
  ts: z.string().min(1),
  thread_ts: z.string().optional(),
  channel: z.string().min(1),
  channel_type: z.string().optional(),
  team: z.string().optional(),
  /** The author's team, in Slack Connect channels (app_mention). */
  user_team: z.string().optional(),
  /** Files shared with the message (`file_share`): fetched with the bot token (files:read). */
  files: z.array(SlackFile).optional(),
});
export type SlackMessageEvent = z.infer<typeof SlackMessageEvent>;

/** The Events API envelope; `event` is read as a message event only when its type is one. */
export const EventCallback = z.object({
  type: z.literal('event_callback'),
  team_id: z.string().optional(),
  event_id: z.string().optional(),
  event: z.looseObject({ type: z.string() }).optional(),
});
export type EventCallback = z.infer<typeof EventCallback>;

/** A click on a message's button (interactivity, `block_actions`). */
export const BlockActions = z.object({
  type: z.literal('block_actions'),
  team: z.object({ id: z.string().optional() }).nullish(),
  user: z.object({ id: z.string(), team_id: z.string().optional() }),
  channel: z.object({ id: z.string().optional() }).optional(),
  container: z.object({ channel_id: z.string().optional(), message_ts: z.string().optional() }).optional(),
  message: z.object({ ts: z.string().optional(), thread_ts: z.string().optional() }).optional(),
  actions: z
    .array(
      z.object({
        type: z.string().optional(),
        action_id: z.string().optional(),
        value: z.string().optional(),
        action_ts: z.string().optional(),
      }),
    )
    .optional(),
});
export type BlockActions = z.infer<typeof BlockActions>;

/** A stored Slack body: an event, a click, or something Patchbay does not read (by its type). */
export type SlackPayload =
  | { kind: 'event'; body: EventCallback }
  | { kind: 'click'; body: BlockActions }
  | { kind: 'other'; type: string }
  | { kind: 'invalid'; problem: string };

export function parseSlackPayload(raw: string): SlackPayload {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { kind: 'invalid', problem: 'the body is not JSON' };
  }
  const type =
    typeof json === 'object' && json !== null && 'type' in json && typeof json.type === 'string'
      ? json.type
      : 'unknown';
  const schema = type === 'event_callback' ? EventCallback : type === 'block_actions' ? BlockActions : undefined;
  if (!schema) return { kind: 'other', type };
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    return {
      kind: 'invalid',
      problem: `a ${type} payload that does not match Slack's format: ${z.prettifyError(parsed.error).replaceAll('\n', '; ')}`,
    };
  return parsed.data.type === 'event_callback'
    ? { kind: 'event', body: parsed.data }
    : { kind: 'click', body: parsed.data };
}

/** The event of an envelope as a message event, when it is a `message` or `app_mention` that parses. */
export function messageEventOf(body: EventCallback): { event: SlackMessageEvent } | { problem: string } | undefined {
  if (body.event?.type !== 'message' && body.event?.type !== 'app_mention') return undefined;
  const parsed = SlackMessageEvent.safeParse(body.event);
  return parsed.success
    ? { event: parsed.data }
    : {
        problem: `a ${body.event.type} event that does not match Slack's format: ${z.prettifyError(parsed.error).replaceAll('\n', '; ')}`,
      };
}

/**
 * `agent_session_stopped`: a person pressed Slack's native Stop on the thread's agent session
 * (docs.slack.dev/reference/events/agent_session_stopped). `streaming_message_ts` lists the
 * streams Slack stopped with it, empty when none was open.
 */
export const AgentSessionStopped = z.object({
  type: z.literal('agent_session_stopped'),
  channel: z.string().min(1),
  user: z.string().min(1),
  thread_ts: z.string().min(1),
  streaming_message_ts: z.array(z.string()).optional(),
  event_ts: z.string().optional(),
});
export type AgentSessionStopped = z.infer<typeof AgentSessionStopped>;

/** The envelope's event as a native Stop, when it is one that parses. */
export function stopEventOf(body: EventCallback): { event: AgentSessionStopped } | { problem: string } | undefined {
  if (body.event?.type !== 'agent_session_stopped') return undefined;
  const parsed = AgentSessionStopped.safeParse(body.event);
  return parsed.success
    ? { event: parsed.data }
    : {
        problem: `an agent_session_stopped event that does not match Slack's format: ${z.prettifyError(parsed.error).replaceAll('\n', '; ')}`,
      };
}
