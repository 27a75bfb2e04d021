import { z } from 'zod';

/**
 * Events that are published to whoever is watching a session right now and never stored: the
 * assistant's text as it streams. The stored `assistant-message` of the same turn supersedes them.
 */
export const LiveEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('assistant-delta'),
    turn: z.number().int().nonnegative(),
    /** Where `text` starts in the turn's text so far, so a watcher can tell it missed a part. */
    offset: z.number().int().nonnegative(),
    text: z.string(),
  }),
]);
export type LiveEvent = z.infer<typeof LiveEvent>;

/** A live event with the session it belongs to, as it travels between processes. */
export const LiveNotice = z.object({ sessionId: z.string(), event: LiveEvent });
export type LiveNotice = z.infer<typeof LiveNotice>;

/** Publishes transient events. Best effort: must not throw, and a lost event only delays the text. */
export interface LivePublisher {
  publishLive(sessionId: string, event: LiveEvent): void;
}
