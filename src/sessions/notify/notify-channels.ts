import { z } from 'zod';

/**
 * A PostgreSQL NOTIFY channel: its name, the zod schema of its JSON payload and the handler that
 * takes each notice in a listening process, so the writer and the listener agree on one definition
 * and go-to-definition leads from the NOTIFY to what handles it. PostgreSQL cuts payloads at 8000
 * bytes; writers keep theirs below that.
 */
export type NotifyChannel<T, Handler = unknown> = {
  readonly name: string;
  readonly payload: z.ZodType<T>;
  /** Takes each notice (its first parameter is the state of the listener). */
  readonly handler: Handler;
};

export function defineChannel<T, Handler>(
  name: string,
  payload: z.ZodType<T>,
  handler: Handler,
): NotifyChannel<T, Handler> {
  if (!/^[a-z_]+$/.test(name)) throw new Error(`a NOTIFY channel name is lowercase letters and underscores: ${name}`);
  return { name, payload, handler };
}

/** The payload, or undefined when it is not this channel's JSON (a listener skips it). */
export function parseNotice<T>(channel: Pick<NotifyChannel<T>, 'payload'>, payload: string | undefined): T | undefined {
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
