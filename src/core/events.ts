import { z } from 'zod';
import { Actor } from './actor.ts';
import { SessionStatus } from './session-status.ts';
import { ThreadRef } from './thread-ref.ts';

/**
 * The one vocabulary between layers, the API and the web page. Every event is appended to the
 * session's log with a per-session sequence number; status, transcript and replies derive from it.
 */
export const SessionEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('session-created'),
    repo: z.string(),
    prompt: z.string(),
    actor: Actor,
    thread: ThreadRef,
  }),
  z.object({ type: z.literal('thread-added'), thread: ThreadRef }),
  z.object({
    type: z.literal('user-message'),
    actor: Actor,
    text: z.string(),
    /** Set when the message answers a question the agent asked. */
    questionId: z.string().optional(),
  }),
  z.object({ type: z.literal('assistant-message'), text: z.string(), turn: z.number().int().nonnegative() }),
  z.object({
    type: z.literal('tool-start'),
    callId: z.string(),
    name: z.string(),
    input: z.unknown(),
  }),
  z.object({
    type: z.literal('tool-end'),
    callId: z.string(),
    name: z.string(),
    isError: z.boolean(),
    output: z.string(),
    durationMs: z.number().nonnegative(),
  }),
  z.object({
    type: z.literal('question-asked'),
    questionId: z.string(),
    question: z.string(),
    choices: z.array(z.string()).optional(),
    recommended: z.string().optional(),
  }),
  z.object({ type: z.literal('question-answered'), questionId: z.string(), actor: Actor, text: z.string() }),
  z.object({
    type: z.literal('status-changed'),
    from: SessionStatus,
    to: SessionStatus,
    reason: z.string().optional(),
  }),
  z.object({
    type: z.literal('workspace-ready'),
    branch: z.string(),
    baseBranch: z.string(),
    baseCommit: z.string(),
  }),
  z.object({ type: z.literal('diff-updated'), stat: z.string(), filesChanged: z.number().int().nonnegative() }),
  z.object({
    type: z.literal('check-finished'),
    name: z.string(),
    passed: z.boolean(),
    output: z.string(),
  }),
  z.object({ type: z.literal('verification-finished'), passed: z.boolean(), summary: z.string() }),
  z.object({
    type: z.literal('branch-pushed'),
    branch: z.string(),
    commit: z.string(),
    remote: z.string(),
  }),
  z.object({
    type: z.literal('pr-opened'),
    url: z.string(),
    number: z.number().int().positive(),
    branch: z.string(),
    commit: z.string(),
  }),
  z.object({
    type: z.literal('usage'),
    turn: z.number().int().nonnegative(),
    model: z.string(),
    inputTokens: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
    cacheReadTokens: z.number().int().nonnegative(),
    cacheWriteTokens: z.number().int().nonnegative(),
  }),
  z.object({
    type: z.literal('context-compacted'),
    summary: z.string(),
    messagesReplaced: z.number().int().nonnegative(),
  }),
  z.object({ type: z.literal('error'), code: z.string(), message: z.string() }),
  /** A run that was interrupted (its worker crashed or shut down) and is taken up again from the log. */
  z.object({ type: z.literal('run-resumed'), reason: z.string() }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
export type SessionEventType = SessionEvent['type'];
export type EventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;

/** An event as stored in the log. `seq` starts at 1 and has no gaps within a session. */
export const StoredEvent = z.object({
  sessionId: z.string(),
  seq: z.number().int().positive(),
  at: z.string(),
  event: SessionEvent,
});
export type StoredEvent = z.infer<typeof StoredEvent>;
