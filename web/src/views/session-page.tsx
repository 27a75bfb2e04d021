import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { SessionDetail } from '../../../src/api/api-types.ts';
import { api, savedAuthor } from '../api.ts';
import { openSessionStream } from '../live-stream.ts';
import { SessionModel } from '../session-model.ts';
import { ChecksView } from './checks-view.tsx';
import { Composer } from './composer.tsx';
import { DiffView } from './diff-view.tsx';
import { KnowledgeView } from './knowledge-view.tsx';
import { SidePanel } from './side-panel.tsx';
import { StatusBadge } from './status-badge.tsx';
import { TimelineView } from './timeline-view.tsx';

type Tab = 'timeline' | 'diff' | 'checks' | 'knowledge';
const tabs: { id: Tab; label: string }[] = [
  { id: 'timeline', label: 'Timeline' },
  { id: 'diff', label: 'Diff' },
  { id: 'checks', label: 'Checks' },
  { id: 'knowledge', label: 'Repo' },
];

/** Event types after which the side panel (usage, cost, threads, result) is read again. */
const detailTriggers = new Set(['status-changed', 'usage', 'thread-added', 'pr-opened', 'branch-pushed', 'workspace-ready']);

/** `/sessions/:id`: the live timeline, the diff, checks, the side panel and the message box. */
export function SessionPage({ id }: { id: string }) {
  const model = useRef(new SessionModel()).current;
  const [version, setVersion] = useState(0);
  const [detail, setDetail] = useState<SessionDetail | undefined>();
  const [error, setError] = useState('');
  const [connection, setConnection] = useState<'open' | 'reconnecting'>('reconnecting');
  const [tab, setTab] = useState<Tab>('timeline');
  const frame = useRef<number | undefined>(undefined);
  const detailTimer = useRef<number | undefined>(undefined);
  const marked = useRef({ first: false, caughtUp: false });

  const loadDetail = useCallback(() => {
    api.session(id).then(
      (next) => {
        setDetail(next);
        setError('');
      },
      (err: Error) => setError(err.message),
    );
  }, [id]);

  // Many events arrive together (the backlog, a busy run): render once per frame.
  const schedule = useCallback(() => {
    frame.current ??= requestAnimationFrame(() => {
      frame.current = undefined;
      setVersion(model.version);
    });
  }, []);

  useEffect(() => {
    loadDetail();
    const close = openSessionStream(id, {
      lastSeq: () => model.lastSeq,
      onState: setConnection,
      onLive: (event) => model.applyLive(event) && schedule(),
      onEvent: (stored) => {
        if (!model.apply(stored)) return;
        schedule();
        if (detailTriggers.has(stored.event.type)) {
          clearTimeout(detailTimer.current);
          detailTimer.current = window.setTimeout(loadDetail, 250);
        }
      },
    });
    return () => {
      close();
      clearTimeout(detailTimer.current);
      if (frame.current !== undefined) cancelAnimationFrame(frame.current);
    };
  }, [id]);

  // Marks for bench/web-render.ts and the browser tests: first events on screen, whole log in.
  useEffect(() => {
    if (!marked.current.first && model.items.length > 0) {
      marked.current.first = true;
      performance.mark('patchbay:first-render');
    }
    if (!marked.current.caughtUp && detail && model.lastSeq >= detail.lastSeq) {
      marked.current.caughtUp = true;
      performance.mark('patchbay:caught-up');
      document.body.dataset.caughtUp = 'true';
    }
  }, [version, detail]);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement | null;
      const typing = target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' || target.tagName === 'SELECT' || target.isContentEditable);
      if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === '/') {
        event.preventDefault();
        setTab('timeline');
        requestAnimationFrame(() => document.getElementById('message')?.focus());
      }
      const index = ['1', '2', '3', '4'].indexOf(event.key);
      if (index >= 0) setTab(tabs[index]!.id);
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);

  const status = model.status ?? detail?.status;
  const stoppable = status === 'queued' || status === 'running' || status === 'waiting';
  const stop = async () => {
    const author = savedAuthor();
    try {
      await api.stop(id, author);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <main class="session-page">
      <div class="session-head">
        <div class="title-row">
          <h1 id="title">{detail?.title ?? '…'}</h1>
          <span id="status">
            <StatusBadge status={status} />
          </span>
          <span class={`conn conn-${connection}`} aria-live="polite">
            {connection === 'open' ? 'live' : 'reconnecting…'}
          </span>
          {stoppable && (
            <button id="stop" class="danger" onClick={stop}>
              Stop
            </button>
          )}
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="tabs" role="tablist">
          {tabs.map((t, i) => (
            <button
              role="tab"
              id={`tab-${t.id}`}
              aria-selected={tab === t.id}
              class={tab === t.id ? 'tab active' : 'tab'}
              onClick={() => setTab(t.id)}
              title={`${t.label} (${i + 1})`}
            >
              {t.label}
              {t.id === 'checks' && model.checks.length + model.verdicts.length > 0 && <span class="count">{model.checks.length + model.verdicts.length}</span>}
              {t.id === 'diff' && model.pushes.length > 0 && <span class="count">{model.pushes.length}</span>}
            </button>
          ))}
        </div>
      </div>
      <div class="session-body">
        <section class="main-col" role="tabpanel" aria-labelledby={`tab-${tab}`}>
          {tab === 'timeline' && (
            <>
              <TimelineView model={model} version={version} sessionId={id} />
              <Composer sessionId={id} model={model} version={version} status={status} />
            </>
          )}
          {tab === 'diff' && <DiffView sessionId={id} pushes={model.pushes.length} />}
          {tab === 'checks' && <ChecksView model={model} version={version} />}
          {tab === 'knowledge' && <KnowledgeView repo={detail?.repo} />}
        </section>
        <SidePanel detail={detail} model={model} version={version} />
      </div>
    </main>
  );
}
