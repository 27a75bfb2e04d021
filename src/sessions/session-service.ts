import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ciActor, type Actor } from '../core/actor.ts';
import { PatchbayError } from '../core/errors.ts';
import { Inbound } from '../core/inbound.ts';
import type { ThreadRef } from '../core/thread-ref.ts';
import { type ApprovalAnswer, type ApprovalAnswerResult, answerApproval } from './approval-answer.ts';
import type { RunQueue } from './run-queue.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { DuplicateDelivery, type Delivery, type SessionStore } from './session-store.ts';

export type HandleResult =
  | { kind: 'started'; session: SessionRecord }
  | { kind: 'appended'; session: SessionRecord }
  | { kind: 'stopped'; session: SessionRecord }
  | { kind: 'not-running'; session: SessionRecord }
  | { kind: 'duplicate' }
  | { kind: 'no-session' }
  | { kind: 'refused'; message: string };

export type SessionService = ReturnType<typeof createSessionService>;

/**
 * Turns inbound commands into session state: find or create the session for the thread, append
 * the message to the event log, and enqueue a run. Does no model or sandbox work itself, so
 * webhook receivers can call it and acknowledge at once.
 */
export function createSessionService(deps: {
  store: SessionStore;
  queue: Pick<RunQueue, 'enqueue'>;
  log: Logger;
  newId?: () => string;
}) {
  const { store, queue, log } = deps;
  const newId = deps.newId ?? randomUUID;

  async function message(
    session: SessionRecord,
    actor: Actor,
    text: string,
    questionId?: string,
    delivery?: Delivery,
  ): Promise<HandleResult> {
    const event = { type: 'user-message' as const, actor, text, ...(questionId && { questionId }) };
    const { session: after } = await store.transition(session.id, 'enqueue', {
      events: [{ event }],
      ...(delivery && { delivery }),
    });
    await queue.enqueue(session.id);
    return { kind: 'appended', session: after };
  }

  async function stop(session: SessionRecord, actor: Actor, delivery?: Delivery): Promise<HandleResult> {
    const { session: after, applied } = await store.transition(session.id, 'cancel', {
      reason: `stopped by ${actor.name}`,
      ...(delivery && { delivery }),
    });
    return applied ? { kind: 'stopped', session: after } : { kind: 'not-running', session: after };
  }

  async function start(
    input: {
      thread: ThreadRef;
      actor: Actor;
      text: string;
      repo: string;
      baseBranch?: string | undefined;
      branch?: string | undefined;
    },
    delivery?: Delivery,
  ): Promise<HandleResult> {
    const id = newId();
    const { session } = await store.create({
      ...(delivery && { delivery }),
      id,
      repo: input.repo,
      prompt: input.text,
      title: titleFrom(input.text),
      requester: input.actor,
      thread: input.thread,
      ...(input.baseBranch && { baseBranch: input.baseBranch }),
      ...(input.branch && { branch: input.branch }),
    });
    await queue.enqueue(id);
    log.info({ sessionId: id, repo: input.repo }, 'session started');
    return { kind: 'started', session };
  }

  return {
    async handle(input: Inbound): Promise<HandleResult> {
      const inbound = Inbound.parse(input);
      // The delivery id is recorded in the same transaction as what the delivery writes, so a
      // redelivery writes nothing twice and a failed write leaves the redelivery free to retry.
      const delivery = inbound.deliveryId ? { source: inbound.thread.source, id: inbound.deliveryId } : undefined;
      try {
        const existing = await store.findByThread(inbound.thread);
        switch (inbound.kind) {
          case 'start':
            if (existing) return await message(existing, inbound.actor, inbound.text, undefined, delivery);
            return await start(inbound, delivery);
          case 'message':
            return existing
              ? await message(existing, inbound.actor, inbound.text, undefined, delivery)
              : { kind: 'no-session' };
          case 'answer':
            return existing
              ? await message(existing, inbound.actor, inbound.text, inbound.questionId, delivery)
              : { kind: 'no-session' };
          case 'stop':
            return existing ? await stop(existing, inbound.actor, delivery) : { kind: 'no-session' };
          case 'approval':
            return existing ? await approval(deps, existing, inbound, delivery) : { kind: 'no-session' };
          case 'ci-failed':
            return existing ? await ciFailed(deps, existing, inbound, delivery) : { kind: 'no-session' };
          default: {
            const _never: never = inbound;
            return _never;
          }
        }
      } catch (error) {
        if (!(error instanceof DuplicateDelivery)) throw error;
        log.info({ deliveryId: inbound.deliveryId }, 'duplicate delivery ignored');
        return { kind: 'duplicate' };
      }
    },

    start: (input: Parameters<typeof start>[0]) => start(input),

    async sendMessage(sessionId: string, actor: Actor, text: string, questionId?: string): Promise<HandleResult> {
      return message(await mustGet(store, sessionId), actor, text, questionId);
    },

    async stop(sessionId: string, actor: Actor): Promise<HandleResult> {
      return stop(await mustGet(store, sessionId), actor);
    },

    /** A person's decision on a held command (answerApproval): recorded, and the run that acts on it queued. */
    async answerApproval(sessionId: string, answer: ApprovalAnswer): Promise<ApprovalAnswerResult> {
      return answerApproval({ store, queue }, await mustGet(store, sessionId), answer);
    },
  };
}

async function mustGet(store: SessionStore, sessionId: string): Promise<SessionRecord> {
  const session = await store.get(sessionId);
  if (!session) throw new PatchbayError('not_found', `session ${sessionId} does not exist`);
  return session;
}

/** Records the CI failure; a follow-up also hands it to the agent and queues a run. */
async function ciFailed(
  deps: { store: SessionStore; queue: Pick<RunQueue, 'enqueue'>; log: Logger },
  session: SessionRecord,
  inbound: Extract<Inbound, { kind: 'ci-failed' }>,
  delivery?: Delivery,
): Promise<HandleResult> {
  const { store, queue, log } = deps;
  const failed = { event: { type: 'ci-failed' as const, ...inbound.failure } };
  if (!inbound.failure.followUp) {
    await store.append(session.id, [failed], delivery);
    return { kind: 'appended', session: (await store.get(session.id)) ?? session };
  }
  const message = { event: { type: 'user-message' as const, actor: ciActor, text: inbound.text } };
  const { session: after } = await store.transition(session.id, 'enqueue', {
    events: [failed, message],
    ...(delivery && { delivery }),
  });
  await queue.enqueue(session.id);
  log.info({ sessionId: session.id, commit: inbound.failure.commit }, 'CI follow-up queued');
  return { kind: 'appended', session: after };
}

/** An approval decision from a thread: recorded and acted on, or refused with the words to say why. */
async function approval(
  deps: { store: SessionStore; queue: Pick<RunQueue, 'enqueue'> },
  session: SessionRecord,
  inbound: Extract<Inbound, { kind: 'approval' }>,
  delivery?: Delivery,
): Promise<HandleResult> {
  const { actor, requestId, decision, reason, vouched } = inbound;
  const answer = { requestId, decision, actor, surface: inbound.thread.source, reason, vouched };
  const result = await answerApproval(deps, session, answer, delivery);
  if (result.kind === 'decided') return { kind: 'appended', session: result.session };
  if (result.kind === 'not-allowed') return { kind: 'refused', message: result.message };
  return { kind: 'refused', message: 'That request is no longer open: it was decided already, or it expired.' };
}

/** A short title from the task's first line. */
export function titleFrom(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 72 ? `${line.slice(0, 69).trimEnd()}...` : line || 'Untitled task';
}
