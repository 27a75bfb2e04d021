import type { SessionEvent, StoredEvent } from './events.ts';
import type { SessionRecord } from './session-record.ts';
import type { ThreadRef } from './thread-ref.ts';

/**
 * The sessions as an integration reads them, and binds threads to them. The session store
 * (`SessionStore`, src/sessions/session-store.ts) is the implementation and the composition root
 * passes it as it is, so each member here has the name of the store's member that answers it.
 */
export interface SessionLookup {
  /** Reads a session (for replies that need its state). */
  get(sessionId: string): Promise<SessionRecord | undefined>;
  /** Finds the session a thread belongs to. */
  findByThread(thread: ThreadRef): Promise<SessionRecord | undefined>;
  /** Binds another thread (say, the PR the session opened) to a session; false when it was bound already. */
  addThread(sessionId: string, thread: ThreadRef): Promise<boolean>;
  /** The threads a session lives in, oldest first. */
  threads(sessionId: string): Promise<ThreadRef[]>;
  /** A session's events of these types, in log order (a question's choices, a pushed commit, a PR description). */
  events(sessionId: string, query: { types: SessionEvent['type'][] }): Promise<StoredEvent[]>;
}
