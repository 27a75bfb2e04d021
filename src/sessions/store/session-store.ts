import type { ArgsAfterDb, Db } from '../../../db/database.ts';
import type { SessionStatus } from '../../core/session-status.ts';
import type { ThreadRef } from '../../core/thread-ref.ts';
import { recordMarker } from './request-markers.ts';
import { readEventPage, readUsageByModel } from './event-pages.ts';
import { appendToLog, readEvents } from './event-log.ts';
import { createSession, transitionSession, type NewSession } from './session-lifecycle.ts';
import {
  currentRunEpoch,
  databaseAnswers,
  expiredApprovals,
  getSession,
  idleQueued,
  listSessions,
  queueStanding,
  untoldWaiting,
} from './session-queries.ts';
import { listSessionRepos, listSessionSummaries } from './session-summaries.ts';
import {
  type ChildSpawn,
  listChildren,
  noteChildRun,
  readyParents,
  spawnChildren,
  wakeParent,
} from '../subtasks/session-children.ts';
import { addThread, findSessionByThread, listThreads } from './session-threads.ts';
import { commitStep, readTranscript, replaceTranscript } from './transcript-store.ts';

export type SessionStore = ReturnType<typeof createSessionStore>;

/**
 * The sessions and everything kept per session: the session rows and their lifecycle
 * (session-lifecycle.ts, session-queries.ts), the threads they are followed on (session-threads.ts),
 * the event log (event-log.ts, event-pages.ts), the transcript (transcript-store.ts) and the
 * marker ids that keep a write from being made twice (request-markers.ts). Each write is one
 * transaction under the session's row lock (session-lock.ts). The database itself stays inside.
 */
export function createSessionStore(db: Db) {
  return {
    /** Creates a queued session bound to its first thread, with its first events (session-lifecycle.ts). */
    create: (input: NewSession) => createSession(db, input),
    get: (sessionId: string) => getSession(db, sessionId),
    list: (options?: { limit?: number; status?: SessionStatus }) => listSessions(db, options),
    /** Sessions newest first with their surfaces, pull request and checks, for the session list. */
    summaries: (options?: Parameters<typeof listSessionSummaries>[1]) => listSessionSummaries(db, options),
    /** The repositories sessions were started on. */
    repos: () => listSessionRepos(db),
    /** Queued sessions untouched for `seconds`: their run may never have reached the queue. */
    idleQueued: (seconds: number) => idleQueued(db, seconds),
    expiredApprovals: (now: Date) => expiredApprovals(db, now),
    /** The epoch of the run that holds the session now; undefined when there is no such session. */
    runEpoch: (sessionId: string) => currentRunEpoch(db, sessionId),
    /** Where a queued session stands in the line; undefined when it is not queued. */
    queueStanding: (sessionId: string) => queueStanding(db, sessionId),
    /** Sessions queued for longer than `seconds` that were not told in this wait where they stand. */
    untoldWaiting: (seconds: number) => untoldWaiting(db, seconds),
    /** Whether the database answers at all. */
    answers: () => databaseAnswers(db),

    findByThread: (ref: ThreadRef) => findSessionByThread(db, ref),
    /** Binds another thread to the session; false when it was bound already. */
    addThread: (sessionId: string, ref: ThreadRef) => addThread(db, sessionId, ref),
    threads: (sessionId: string) => listThreads(db, sessionId),

    /** Appends events; with `marker`, only once per request (DuplicateRequest the second time). */
    append: (...args: ArgsAfterDb<typeof appendToLog>) => appendToLog(db, ...args),
    /** A session's events in order. */
    events: (...args: ArgsAfterDb<typeof readEvents>) => readEvents(db, ...args),
    /** One page of a session's log, read backwards from `before`. */
    eventPage: (...args: ArgsAfterDb<typeof readEventPage>) => readEventPage(db, ...args),
    /** A session's tokens per model, summed from its `usage` events. */
    usageByModel: (sessionId: string) => readUsageByModel(db, sessionId),
    /** Applies a lifecycle trigger under the session's row lock (session-lifecycle.ts). */
    transition: (...args: ArgsAfterDb<typeof transitionSession>) => transitionSession(db, ...args),

    transcript: (sessionId: string) => readTranscript(db, sessionId),
    /** Writes one step of a run atomically, with the checkpoint after its tool call, if any. */
    commitStep: (...args: ArgsAfterDb<typeof commitStep>) => commitStep(db, ...args),
    /** Replaces the transcript after compaction, with its events and the summarizing call's usage. */
    replaceTranscript: (...args: ArgsAfterDb<typeof replaceTranscript>) => replaceTranscript(db, ...args),

    /** A session's sub-task sessions in their order, one spawn call's when `callId` is given (session-children.ts). */
    children: (parentId: string, callId?: string) => listChildren(db, parentId, callId),
    /** Creates a spawn call's children with the parent's step, once per call and index (session-children.ts). */
    spawnChildren: (parentId: string, spawn: ChildSpawn) => spawnChildren(db, parentId, spawn),
    /** After a child's run: its end or question on the parent's log, the parent queued when all ended. */
    noteChildRun: (childId: string) => noteChildRun(db, childId),
    /** Parents waiting on children that have all ended (a crash came between), for the sweep. */
    readyParents: () => readyParents(db),
    /** Queues a parent waiting on children that have all ended; true when it did. */
    wakeParent: (parentId: string) => wakeParent(db, parentId),

    /** Records the dedupe key of a request; false when it was seen before. */
    recordMarker: (source: string, key: string) => recordMarker(db, source, key),
  };
}
