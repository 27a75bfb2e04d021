import { z } from 'zod';
import { Actor } from './actor.ts';
import { AttachmentRef } from './attachment.ts';
import { ThreadRef } from './thread-ref.ts';

/**
 * What an integration hands the session service after normalizing a webhook, a Slack event or an
 * API call. `start` opens a session bound to the thread; the others address the thread's session.
 */
export const Inbound = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('start'),
    thread: ThreadRef,
    actor: Actor,
    text: z.string().min(1),
    repo: z.string().min(1),
    /** Branch to start from; the repository's default branch when absent. */
    baseBranch: z.string().min(1).optional(),
    /** An existing branch to work on (a pull request's head); a new session branch when absent. */
    branch: z.string().min(1).optional(),
    /** Pictures attached to the message, already kept as waiting attachments. */
    attachments: z.array(AttachmentRef).optional(),
    /** The dedupe key of the request that carried this (source-qualified): the same request twice changes nothing twice. */
    dedupeKey: z.string().min(1).optional(),
  }),
  z.object({
    kind: z.literal('message'),
    thread: ThreadRef,
    actor: Actor,
    text: z.string().min(1),
    attachments: z.array(AttachmentRef).optional(),
    dedupeKey: z.string().min(1).optional(),
  }),
  z.object({
    kind: z.literal('answer'),
    thread: ThreadRef,
    actor: Actor,
    questionId: z.string().min(1),
    text: z.string().min(1),
    attachments: z.array(AttachmentRef).optional(),
    dedupeKey: z.string().min(1).optional(),
  }),
  /**
   * CI failed on the head commit of a pull request the session opened (GitHub check suite, check
   * run or workflow run). Always recorded as a `ci-failed` event; with `followUp`, the failure
   * (job log excerpt included) goes to the agent as a message from `ciActor` and a run is queued.
   */
  z.object({
    kind: z.literal('ci-failed'),
    thread: ThreadRef,
    failure: z.object({
      commit: z.string().min(1),
      pullNumber: z.number().int().positive(),
      name: z.string().min(1),
      url: z.string().optional(),
      logExcerpt: z.string(),
      followUp: z.boolean(),
      reason: z.string().optional(),
    }),
    /** The message the agent gets when `followUp`. */
    text: z.string().min(1),
    dedupeKey: z.string().min(1).optional(),
  }),
  /**
   * A person's decision on the session's open approval request. `vouched`: the surface
   * checked that this person may decide for anyone (write access on GitHub); otherwise only the
   * requester may.
   */
  z.object({
    kind: z.literal('approval'),
    thread: ThreadRef,
    actor: Actor,
    requestId: z.string().min(1),
    decision: z.enum(['approved', 'denied']),
    reason: z.string().min(1).optional(),
    vouched: z.boolean().optional(),
    dedupeKey: z.string().min(1).optional(),
  }),
  /**
   * A person allows a host the sandbox was refused, for the session or its repository.
   * `vouched` as for approvals: otherwise only the requester may.
   */
  z.object({
    kind: z.literal('egress-allow'),
    thread: ThreadRef,
    actor: Actor,
    host: z.string().min(1).max(300),
    port: z.number().int().min(1).max(65535).optional(),
    scope: z.enum(['session', 'repository']),
    vouched: z.boolean().optional(),
    dedupeKey: z.string().min(1).optional(),
  }),
  z.object({
    kind: z.literal('stop'),
    thread: ThreadRef,
    actor: Actor,
    dedupeKey: z.string().min(1).optional(),
  }),
]);
export type Inbound = z.infer<typeof Inbound>;

/** What the session service did with an inbound command, as much as an integration needs. */
export type InboundOutcome =
  | { kind: 'started' | 'appended' | 'stopped' | 'not-running'; session: { id: string; status: string; title: string } }
  | { kind: 'duplicate' | 'no-session' }
  /** Not done, with the words to tell the person (an approval they may not give, or one no longer open). */
  | { kind: 'refused'; message: string };
