import type { Db } from '../../../db/database.ts';
import { SessionEvent, type SessionEventType } from '../../core/events.ts';
import type { SessionStatus } from '../../core/session-status.ts';
import { ThreadRef, type ThreadSource } from '../../core/thread-ref.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import { listSessions } from './session-queries.ts';

/** Where the latest commit's checks stand; `incomplete` when one could not run. */
export type CheckState = 'none' | 'passed' | 'failed' | 'incomplete';

export type SessionSummaryRow = SessionRecord & { surfaces: ThreadSource[]; prUrl: string | null; checks: CheckState };

/** The event types that change what a session list shows. */
export const summaryEventTypes = [
  'session-created',
  'thread-added',
  'status-changed',
  'branch-pushed',
  'pr-opened',
  'check-finished',
  'verification-finished',
] as const satisfies readonly SessionEventType[];

/**
 * Sessions newest first with what a list shows of each: the surfaces it is followed on, its pull
 * request and where its latest checks stand. Three queries, whatever the number of sessions.
 */
export async function listSessionSummaries(
  db: Db,
  options: { limit?: number; status?: SessionStatus; repo?: string } = {},
): Promise<SessionSummaryRow[]> {
  const sessions = await listSessions(db, options);
  if (sessions.length === 0) return [];
  const ids = sessions.map((s) => s.id);
  const [threads, events] = await Promise.all([
    db
      .selectFrom('session_threads')
      .select(['session_id', 'thread'])
      .where('session_id', 'in', ids)
      .orderBy('id')
      .execute(),
    db
      .selectFrom('session_events')
      .select(['session_id', 'data'])
      .where('session_id', 'in', ids)
      .where('type', 'in', ['pr-opened', 'check-finished', 'verification-finished'])
      .orderBy('session_id')
      .orderBy('seq')
      .execute(),
  ]);
  const surfaces = new Map<string, Set<ThreadSource>>();
  for (const row of threads) {
    const set = surfaces.get(row.session_id) ?? new Set();
    set.add(ThreadRef.parse(row.thread).source);
    surfaces.set(row.session_id, set);
  }
  const eventsBySession = new Map<string, SessionEvent[]>();
  for (const row of events) {
    const list = eventsBySession.get(row.session_id) ?? [];
    list.push(SessionEvent.parse(row.data));
    eventsBySession.set(row.session_id, list);
  }
  return sessions.map((session) => {
    const own = eventsBySession.get(session.id) ?? [];
    const pr = own.findLast((e) => e.type === 'pr-opened');
    return {
      ...session,
      surfaces: [...(surfaces.get(session.id) ?? [])],
      prUrl: pr?.type === 'pr-opened' ? pr.url : (session.result?.prUrl ?? null),
      checks: checkState(own),
    };
  });
}

/** The repositories sessions were started on, for the list's filter. */
export async function listSessionRepos(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('sessions').select('repo').distinct().orderBy('repo').limit(500).execute();
  return rows.map((r) => r.repo);
}

/**
 * Where the checks of the latest checked commit stand: each check's last outcome on that commit
 * (and the verifier's); failed when any failed, incomplete when any could not run.
 */
export function checkState(events: readonly SessionEvent[]): CheckState {
  const checked = events.filter(
    (e) => (e.type === 'check-finished' && e.phase === 'check') || e.type === 'verification-finished',
  );
  const commit = checked.at(-1);
  if (!commit || (commit.type !== 'check-finished' && commit.type !== 'verification-finished')) return 'none';
  const latest = new Map<string, string>();
  for (const event of checked) {
    if (event.type === 'check-finished' && event.commit === commit.commit)
      latest.set(`check:${event.name}`, event.outcome);
    if (event.type === 'verification-finished' && event.commit === commit.commit) latest.set('verdict', event.outcome);
  }
  const outcomes = [...latest.values()];
  if (outcomes.some((o) => o === 'failed' || o === 'timed-out')) return 'failed';
  if (outcomes.some((o) => o !== 'passed')) return 'incomplete';
  return 'passed';
}
