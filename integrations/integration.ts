import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.ts';
import type { Logger } from 'pino';
import type { StoredEvent } from '../src/core/events.ts';
import type { Inbound } from '../src/core/inbound.ts';
import type { PublishInput } from '../src/harness/run-session.ts';
import type { ThreadRef, ThreadSource } from '../src/core/thread-ref.ts';
import type { SessionRecord } from '../src/sessions/session-record.ts';

export type DeliveryInput = {
  session: SessionRecord;
  thread: ThreadRef;
  /** New events for this thread, in order, since the last successful delivery. */
  events: StoredEvent[];
  /** What this integration returned for the thread last time (undefined the first time). */
  state: unknown;
  signal: AbortSignal;
};

/**
 * An integration's outbound half: it shows a session's progress in a thread of its own source.
 * Called with events in order; must be idempotent for a batch it has partly delivered before (a
 * crash between posting and recording repeats the batch). Throwing leaves the cursor where it was
 * and the batch is retried with backoff.
 */
export interface Integration {
  readonly source: ThreadSource;
  deliver(input: DeliveryInput): Promise<{ state: unknown }>;
  /**
   * Optional: called about once a minute for threads of running sessions that have had every event
   * delivered, so live details that change without events (elapsed time) stay current. Same
   * locking and state as deliver; it must not post new messages.
   */
  refresh?(input: Omit<DeliveryInput, 'events'>): Promise<{ state: unknown }>;
}

/** What the session service says about an inbound command, as much as an integration needs. */
export type InboundOutcome =
  | { kind: 'started' | 'appended' | 'stopped' | 'not-running'; session: { id: string; status: string; title: string } }
  | { kind: 'duplicate' | 'no-session' };

/** What every integration gets from the composition root. */
export type IntegrationContext = {
  /** Hands a normalized command to the session service. Fast: it only writes and enqueues. */
  handle(inbound: Inbound): Promise<InboundOutcome>;
  /** Reads a session (for replies that need its state). */
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  /** Finds the session a thread belongs to. */
  findSession(thread: ThreadRef): Promise<SessionRecord | undefined>;
  /** Binds another thread (say, the PR the session opened) to a session. */
  addThread(sessionId: string, thread: ThreadRef): Promise<boolean>;
  /** Records a delivery id; false when it was seen before. */
  recordDelivery(source: string, deliveryId: string): Promise<boolean>;
  /** The database, for an integration's own tables (installations, stored tokens, its work queue). */
  db: Db;
  log: Logger;
  /** Base URL of the web page: session links are `${publicUrl}/sessions/<id>`. */
  publicUrl: string;
};

/**
 * An integration as the composition root wires it: the outbound half, the inbound HTTP routes
 * (registered in their own Fastify scope, so they may parse raw bodies for signatures), optional
 * background connections (Slack Socket Mode), and optional hooks into the harness.
 */
export type IntegrationModule = {
  integration: Integration;
  routes?: (app: FastifyInstance) => Promise<void>;
  start?: () => Promise<void>;
  stop?: () => Promise<void>;
  harness?: {
    gitEnv?: (repo: string, signal: AbortSignal) => Promise<Record<string, string> | undefined>;
    publish?: (input: PublishInput) => Promise<{ url: string; number: number } | undefined>;
  };
};
