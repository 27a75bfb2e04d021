import type { SessionEvent, StoredEvent } from './events.ts';
import type { PendingQuestion, SessionRecord, SessionResult } from './session-record.ts';
import type { SessionStatus, SessionTrigger } from './session-status.ts';
import type { ModelMessage, Usage } from './transcript.ts';
import type { StepCheckpoint } from './work-checkpoint.ts';

/** An event to append; one whose dedupe key is already in the session's log is not written again. */
export type NewEvent = { event: SessionEvent; dedupeKey?: string };

export type TranscriptEntry = { idx: number; message: ModelMessage; eventSeq: number | null };

export type SessionPatch = Partial<{
  branch: string | null;
  baseBranch: string | null;
  pendingQuestion: PendingQuestion | null;
  result: SessionResult | null;
  error: string | null;
}>;

/** One atomic step of a run: transcript, events, usage and session fields land together or not at all. */
export type Step = {
  messages?: { message: ModelMessage; eventSeq?: number }[];
  events?: NewEvent[];
  usage?: Usage;
  patch?: SessionPatch;
  /**
   * The checkpoint of the work after the step's tool call, stored with its result: a resumed run
   * never finds the work of a call whose result is missing (it restores the checkpoint before it).
   */
  checkpoint?: StepCheckpoint;
};

export type TransitionOptions = {
  reason?: string;
  patch?: SessionPatch;
  events?: NewEvent[];
  /** Refuse the trigger when a user message is in the log that no run has read yet. */
  unlessUnread?: boolean;
};

export type TransitionResult = { session: SessionRecord; applied: boolean; from: SessionStatus; unread?: boolean };

/**
 * The run log: where the agent runner and the harness read a session and write every step of its
 * run. The session store implements it over PostgreSQL; a bench keeps one in memory. Every write is
 * atomic, so a run killed at any point resumes from what the log says.
 */
export interface RunLog {
  get(sessionId: string): Promise<SessionRecord | undefined>;
  transcript(sessionId: string): Promise<TranscriptEntry[]>;
  /** A session's events in order, after `afterSeq`, of the given types when set. */
  events(sessionId: string, options?: { afterSeq?: number; limit?: number; types?: string[] }): Promise<StoredEvent[]>;
  commitStep(sessionId: string, step: Step): Promise<StoredEvent[]>;
  /** Replaces the transcript after compaction, with its events and the summarizing call's usage. */
  replaceTranscript(
    sessionId: string,
    messages: { message: ModelMessage; eventSeq?: number | null }[],
    events: NewEvent[],
    usage?: Usage,
  ): Promise<void>;
  /** Applies a lifecycle trigger under the session's lock; a trigger that does not apply changes nothing. */
  transition(sessionId: string, trigger: SessionTrigger, options?: TransitionOptions): Promise<TransitionResult>;
  /**
   * Throws (code `lease_lost`) when the run writing here was taken over by another run of the
   * session. The writes above check that themselves; this is for an effect outside the database
   * (a push, a pull request), checked right before it. Absent where no lease is held.
   */
  assertCurrent?(sessionId: string): Promise<void>;
}
