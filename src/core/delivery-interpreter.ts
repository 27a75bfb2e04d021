import { z } from 'zod';
import type { Inbound, InboundOutcome } from './inbound.ts';

/** The services whose deliveries the inbound pipeline works: the key each interpreter is registered by. */
export const DeliverySource = z.enum(['slack', 'github', 'linear']);
export type DeliverySource = z.infer<typeof DeliverySource>;

/**
 * A webhook or event as it arrived, verified, before anything was made of it. The inbound pipeline
 * stores it before the sender gets its acknowledgement, so a crash after the ack loses nothing.
 */
export type ReceivedDelivery = {
  source: string;
  /**
   * What the delivery means, unique per source: the same meaning arriving again (the sender's
   * retry, or a signed body replayed under a new delivery id or event header) is stored once and
   * does nothing. Built from the signed body only (a comment id and action, a review id, Slack's
   * message or event id), never from unsigned headers alone.
   */
  dedupeKey: string;
  /** The transport's id (X-GitHub-Delivery, Slack's envelope id), for logs only. */
  deliveryId?: string;
  /** What kind of delivery this is to its interpreter (X-GitHub-Event, 'event_callback', 'block_actions'). */
  kind: string;
  /** The body exactly as received (the bytes the signature covered), as text. */
  body: string;
  /**
   * Deliveries with the same order key are worked one at a time, in the order they were stored
   * (a retry of the first holds back the second): one GitHub installation's events, one thread's
   * messages. Without one a delivery is worked independently of all others.
   */
  orderKey?: string;
};

export type StoredDelivery = ReceivedDelivery & {
  id: string;
  receivedAt: string;
  /** 1 on the first try. */
  attempt: number;
};

/**
 * What an interpreter makes of a delivery: a command for the session service, or why there is none.
 * `errand` is data the interpreter's own `reply` step reads once the session service has handled the
 * command (which comment to post where); the pipeline passes it through untouched.
 */
export type Interpretation<Errand = never> =
  | {
      kind: 'inbound';
      inbound: Inbound;
      errand?: Errand;
    }
  | { kind: 'ignore'; reason: string };

/**
 * The interpreting half of an integration, as the pipeline drives it after the ack: Slack, GitHub,
 * Linear. Small on purpose; the pipeline does the storing, dedupe, queueing, retries and logging.
 */
export interface DeliveryInterpreter<Errand = never> {
  /** The `source` of the deliveries it reads (the key its receiver stores them under). */
  readonly source: DeliverySource;
  /**
   * Turns a stored delivery into an Inbound, or says why it is ignored. May call its service's API
   * (a permission check) and reply for itself where no session is involved ("Please paste the
   * repository URL" is an ignore with that reason). Throwing means "try again later": the pipeline
   * retries with backoff, so everything here must be safe to repeat.
   */
  interpret(delivery: StoredDelivery, signal: AbortSignal): Promise<Interpretation<Errand>>;
  /**
   * The session service has handled what `interpret` made of a delivery: reply as its errand says
   * (post the progress comment, answer the thread). Throwing retries the delivery (interpret runs
   * again), so this must be safe to repeat. Called only when `interpret` returned an errand.
   */
  reply?(errand: Errand, outcome: InboundOutcome, signal: AbortSignal): Promise<void>;
  /**
   * The delivery failed on its last attempt: tell the thread it came from why ("I could not process
   * this comment: …"). Best effort; a throw is logged, and the delivery stays listed as failed.
   */
  tellFailure(delivery: StoredDelivery, reason: string, signal: AbortSignal): Promise<void>;
}

/** Where a receiver hands a verified delivery before it acknowledges it: one insert, nothing else. */
export type DeliveryInbox = {
  /** Stores the delivery; 'duplicate' when its meaning was stored before. Throws when it could not be stored (do not ack). */
  accept(delivery: ReceivedDelivery): Promise<'accepted' | 'duplicate'>;
};
