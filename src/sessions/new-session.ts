import type { Actor } from '../core/actor.ts';
import type { AttachmentRef } from '../core/attachment.ts';
import type { SessionEvent } from '../core/events.ts';
import type { ThreadRef } from '../core/thread-ref.ts';
import type { Delivery } from './session-store.ts';

/** A session to create, with the task that opens it. */
export type NewSession = {
  id: string;
  repo: string;
  prompt: string;
  title: string;
  requester: Actor;
  thread: ThreadRef;
  baseBranch?: string;
  branch?: string;
  /** Pictures attached to the task. */
  attachments?: AttachmentRef[] | undefined;
  /** Recorded in the same transaction: a redelivery finds it and creates nothing. */
  delivery?: Delivery;
};

/** The task as the session's first message, with its pictures. */
export function firstMessage(input: NewSession): SessionEvent {
  const { requester: actor, prompt: text, attachments } = input;
  return { type: 'user-message', actor, text, ...(attachments?.length && { attachments }) };
}
