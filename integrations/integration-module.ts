import type { ArtifactStore } from '../src/core/artifact-store.ts';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ownTablesOnly } from '../db/own-tables-only.ts';
import type { IntegrationDb, IntegrationTables } from '../db/schema.ts';
import type { ImageIntake } from '../src/core/attachment.ts';
import type { PageSessionIssuer, PageSignInProvider } from '../src/core/page-sign-in.ts';
import type { OutcomeLedger } from '../src/core/pull-outcome.ts';
import type { DeliveryInbox, DeliveryInterpreter } from '../src/core/delivery-interpreter.ts';
import type { GitCredentials, Publisher } from '../src/core/publisher.ts';
import type { RepositoryScout } from '../src/core/repository-scout.ts';
import type { RepoAccess } from '../src/core/repo-access.ts';
import type { SessionLookup } from '../src/core/session-lookup.ts';
import type { SessionFamily } from '../src/core/session-family.ts';
import type { ThreadReplier } from '../src/core/thread-replier.ts';

/**
 * What every integration gets from the composition root. An integration's module takes it as
 * `IntegrationContext<'slack'>` (its own name), so its `db` reaches its own tables only; the root
 * holds the context of all of them.
 */
export type IntegrationContext<Integration extends keyof IntegrationTables = keyof IntegrationTables> = {
  /** Where a receiver stores a verified delivery before acknowledging it (the inbound pipeline). */
  inbox: DeliveryInbox;
  /** The sessions: read them, find a thread's, bind a thread (the session store, by the same names). */
  sessions: SessionLookup;
  /**
   * Remembers what a session on `repo` (the repository URL as the session names it) taught, say a
   * pull request closed unmerged with its reason or a check that is flaky; later runs on the repo
   * find it in the knowledge document. Nothing is kept for a repo that has no document yet.
   */
  addLesson(repo: string, text: string): Promise<void>;
  /** Where what became of a session's pull request is recorded (merged, closed, reverted, …). */
  outcomes: OutcomeLedger;
  /**
   * The database, typed with the integration's own tables (installations, stored tokens, its work
   * queue) and nothing else: sessions, their threads and events are read through `sessions`.
   */
  db: IntegrationDb<Integration>;
  log: Logger;
  /** Base URL of the web page: session links are `${publicUrl}/sessions/<id>`. */
  publicUrl: string;
  /** Takes pictures from messages in (checked, scaled, kept as waiting attachments); without it they are left out. */
  imageIntake?: ImageIntake;
  /** The sessions' kept pictures (before/after screenshots a replier uploads to its thread). */
  artifacts?: ArtifactStore;
  /** Signs a person in to the web page once the integration knows who they are (set with PATCHBAY_API_TOKEN). */
  pageSignIns?: PageSessionIssuer;
  /** A session's fan-out family: its pull requests link each other, its thread lists them all. */
  family?: SessionFamily;
};

/**
 * The root's context as `integration`'s module gets it: its `db` reaches the integration's own
 * tables only, by type and, for another integration's tables, at run time too (db/own-tables-only.ts).
 */
export function contextFor<Integration extends keyof IntegrationTables>(
  context: IntegrationContext,
  integration: Integration,
): IntegrationContext<Integration> {
  return { ...context, db: ownTablesOnly(context.db, integration) };
}

/**
 * An integration as the composition root wires it, by name: the thread replier (outbound), the
 * inbound surface the pipeline drives after the ack, the HTTP routes its receiver serves
 * (registered in their own Fastify scope, so they may parse raw bodies for signatures), optional
 * background connections (Slack Socket Mode), and the harness hooks it offers (a publisher, git
 * credentials). The root lists each hook kind and passes the lists on.
 */
export type IntegrationModule = {
  /** The service, as /healthz and the start-up log name it. */
  name?: 'slack' | 'github' | 'linear';
  replier: ThreadReplier;
  /** Turns this integration's stored deliveries into Inbounds (see DeliveryInterpreter). */
  interpreter?: DeliveryInterpreter<unknown>;
  routes?: (app: FastifyInstance) => Promise<void>;
  /**
   * Connects to the service. A retryable PatchbayError (`service_unavailable`) means it could not
   * be reached: the root retries with backoff while the rest serves. Anything else fails the start.
   */
  start?: () => Promise<void>;
  stop?: () => Promise<void>;
  publisher?: Publisher;
  gitCredentials?: GitCredentials;
  /** Reads a repository's recent pull requests for its unwritten rules. */
  scout?: RepositoryScout;
  /** Whether a session's requester may have work done on a repository it gives credentials for. */
  repoAccess?: RepoAccess;
  /** A way to sign in to the web page this integration offers (GitHub sign-in). */
  pageSignIn?: PageSignInProvider;
};
