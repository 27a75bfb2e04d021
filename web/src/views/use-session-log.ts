import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { SessionDetail } from '../../../src/api/api-types.ts';
import type { SessionEventType, StoredEvent } from '../../../src/core/events.ts';
import { ApiError, api } from '../api.ts';
import { isTerminal } from '../../../src/core/session-status.ts';
import { openNoticeStream, openSessionStream } from '../live-stream.ts';
import { SessionModel } from '../session-model.ts';

/** Events on screen at first, and per older page read as the reader scrolls up. */
const NEWEST_PAGE = 100;
const OLDER_PAGE = 200;
const FACTS_PAGE = 1000;

/**
 * The types the side panel, the Checks and Diff tabs, the status and the answer box are folded
 * from. They are read whole (few, even in a long session), while the timeline holds only the pages
 * the reader has scrolled to.
 */
const factTypes = [
  'session-created',
  'thread-added',
  'user-message',
  'question-asked',
  'question-answered',
  'approval-requested',
  'approval-decided',
  'status-changed',
  'workspace-ready',
  'check-finished',
  'verification-finished',
  'review-gate',
  'ci-failed',
  'branch-pushed',
  'pr-opened',
  'knowledge-loaded',
  'task-routed',
  'autonomy-set',
] as const satisfies readonly SessionEventType[];
const isFact = new Set<string>(factTypes);

/** Event types after which the side panel (usage, cost, threads, result) is read again. */
const detailTriggers = new Set<string>([
  'subtasks-spawned',
  'subtask-ended',
  'status-changed',
  'usage',
  'thread-added',
  'pr-opened',
  'branch-pushed',
  'workspace-ready',
] satisfies SessionEventType[]);

/**
 * The session as the side panel shows it (`GET /api/sessions/:id`): read by `loadDetail`, and by
 * `loadDetailSoon` once a burst of changes is over; `stopDetail` cancels a read waiting for that.
 */
function useDetail(id: string, setError: (message: string) => void, setConnection: (state: Connection) => void) {
  const [detail, setDetail] = useState<SessionDetail | undefined>();
  const timer = useRef<number | undefined>(undefined);
  const loadDetail = useCallback(() => {
    api.session(id).then(
      (next) => {
        setDetail(next);
        setError('');
      },
      (err: Error) => (isMissing(err) ? setConnection('missing') : setError(err.message)),
    );
  }, [id]);
  const loadDetailSoon = () => {
    clearTimeout(timer.current);
    timer.current = window.setTimeout(loadDetail, 250);
  };
  return { detail, loadDetail, loadDetailSoon, stopDetail: () => clearTimeout(timer.current) };
}

/**
 * While a session has sub-tasks that have not ended, their changes (written in their own logs)
 * call `onChange`, so the page reads the session, and with it the children, again.
 */
function useChildNotices(detail: SessionDetail | undefined, onChange: () => void): void {
  const open = (detail?.children ?? []).filter((c) => !isTerminal(c.status)).map((c) => c.sessionId);
  const key = open.join(',');
  const latest = useRef(onChange);
  latest.current = onChange;
  useEffect(() => {
    if (open.length === 0) return;
    const watched = new Set(open);
    return openNoticeStream((sessionId) => {
      if (sessionId === undefined || watched.has(sessionId)) latest.current();
    });
  }, [key]);
}

async function readFacts(id: string): Promise<StoredEvent[]> {
  const pages: StoredEvent[][] = [];
  let before: number | null = null;
  do {
    const page = await api.events(id, { before, limit: FACTS_PAGE, types: factTypes });
    pages.unshift(page.events);
    before = page.nextBefore;
  } while (before !== null);
  return pages.flat();
}

/**
 * The page's link to the server: `connecting` until the stream first opens, `missing` when the
 * server has no session with this id (the page says so instead of waiting for it).
 */
export type Connection = 'connecting' | 'open' | 'reconnecting' | 'missing';

/** A 404 from the API: no session with this id (a wrong link, or another installation's). */
const isMissing = (err: Error) => err instanceof ApiError && err.status === 404;

export type SessionLog = {
  /** The pages of the log read so far and what streamed after them. */
  timeline: SessionModel;
  /** Folded from every event of the fact types. */
  facts: SessionModel;
  version: number;
  connection: Connection;
  detail: SessionDetail | undefined;
  error: string;
  setError: (message: string) => void;
  /** Whether there are events before the oldest held, and whether a page of them is being read. */
  older: { more: boolean; loading: boolean };
  /** Reads the page before the oldest event held; one read at a time. */
  loadOlder: () => void;
};

/**
 * A session's log for its page: the newest page and the facts first, then the stream from the
 * newest seq read (never a replay of the whole log), and older pages on request. Renders at most
 * once per frame, however many events arrive together.
 */
export function useSessionLog(id: string): SessionLog {
  const timeline = useRef(new SessionModel()).current;
  const facts = useRef(new SessionModel()).current;
  const [version, setVersion] = useState(0);
  const [error, setError] = useState('');
  const [connection, setConnection] = useState<Connection>('connecting');
  const { detail, loadDetail, loadDetailSoon, stopDetail } = useDetail(id, setError, setConnection);
  const frame = useRef<number | undefined>(undefined);

  const schedule = useCallback(() => {
    frame.current ??= requestAnimationFrame(() => {
      frame.current = undefined;
      setVersion(timeline.version + facts.version);
    });
  }, []);
  const { older, loadOlder, firstPageRead } = useOlderPages(id, timeline, schedule, setError);

  const onEvent = (stored: StoredEvent) => {
    const shown = timeline.apply(stored);
    const folded = isFact.has(stored.event.type) && facts.apply(stored);
    if (!shown && !folded) return;
    schedule();
    if (detailTriggers.has(stored.event.type)) loadDetailSoon();
  };
  useChildNotices(detail, loadDetailSoon);

  useEffect(() => {
    let close: (() => void) | undefined;
    let gone = false;
    loadDetail();
    Promise.all([api.events(id, { limit: NEWEST_PAGE }), readFacts(id)]).then(
      ([page, factEvents]) => {
        if (gone) return;
        for (const stored of factEvents) facts.apply(stored);
        for (const stored of page.events) {
          timeline.apply(stored);
          if (isFact.has(stored.event.type)) facts.apply(stored);
        }
        firstPageRead(page.nextBefore);
        schedule();
        close = openSessionStream(id, {
          lastSeq: () => timeline.lastSeq,
          onState: setConnection,
          onEvent,
          onLive: (event) => timeline.applyLive(event) && schedule(),
          onInvalid: setError,
        });
      },
      (err: Error) => {
        if (gone) return;
        if (isMissing(err)) setConnection('missing');
        else setError(err.message);
      },
    );
    return () => {
      gone = true;
      close?.();
      stopDetail();
      if (frame.current !== undefined) cancelAnimationFrame(frame.current);
    };
  }, [id]);

  return { timeline, facts, version, connection, detail, error, setError, older, loadOlder };
}

/**
 * The timeline's older pages, read as the reader scrolls up: `firstPageRead` says where the newest
 * page began, `loadOlder` reads the page before the oldest event held, one read at a time.
 */
function useOlderPages(id: string, timeline: SessionModel, schedule: () => void, setError: (message: string) => void) {
  const [older, setOlder] = useState({ more: false, loading: false });
  const cursor = useRef<{ before: number | null; loading: boolean }>({ before: null, loading: false });
  const firstPageRead = (nextBefore: number | null) => {
    cursor.current.before = nextBefore;
    setOlder({ more: nextBefore !== null, loading: false });
  };
  const loadOlder = useCallback(() => {
    const { before, loading } = cursor.current;
    if (before === null || loading) return;
    cursor.current.loading = true;
    setOlder({ more: true, loading: true });
    api.events(id, { before, limit: OLDER_PAGE }).then(
      (page) => {
        timeline.prepend(page.events);
        cursor.current = { before: page.nextBefore, loading: false };
        setOlder({ more: page.nextBefore !== null, loading: false });
        schedule();
      },
      (err: Error) => {
        cursor.current.loading = false;
        setOlder({ more: true, loading: false });
        setError(err.message);
      },
    );
  }, [id]);
  return { older, loadOlder, firstPageRead };
}
