import { z } from 'zod';
import { LiveNotice } from '../core/live-events.ts';

/**
 * A PostgreSQL NOTIFY channel: its name and the zod schema of its JSON payload, so the writer and
 * every listener agree on one definition (go-to-definition leads here from both ends). PostgreSQL
 * cuts payloads at 8000 bytes; writers keep theirs below that.
 */
export type NotifyChannel<T> = { readonly name: string; readonly payload: z.ZodType<T> };

export function defineChannel<T>(name: string, payload: z.ZodType<T>): NotifyChannel<T> {
  if (!/^[a-z_]+$/.test(name)) throw new Error(`a NOTIFY channel name is lowercase letters and underscores: ${name}`);
  return { name, payload };
}

/** The payload, or undefined when it is not this channel's JSON (a listener skips it). */
export function parseNotice<T>(channel: NotifyChannel<T>, payload: string | undefined): T | undefined {
  try {
    const parsed = channel.payload.safeParse(JSON.parse(payload ?? ''));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** A note that an event was written to a session's log. Readers fetch the event itself from the log. */
export const EventNotice = z.object({
  sessionId: z.string().min(1),
  seq: z.number().int().positive(),
  type: z.string().min(1),
});
export type EventNotice = z.infer<typeof EventNotice>;

/** Sent by the session store in the transaction that appends an event (delivered at commit). */
export const sessionEventsChannel = defineChannel('patchbay_events', EventNotice);

/** Transient events (streaming text), published by any process and never stored. */
export const liveEventsChannel = defineChannel('patchbay_live', LiveNotice);
