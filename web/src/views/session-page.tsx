import { useEffect, useRef, useState } from 'preact/hooks';
import type { SessionDetail } from '../../../src/api/api-types.ts';
import type { SessionStatus } from '../../../src/core/session-status.ts';
import { autonomyNotice } from '../../../src/core/autonomy.ts';
import { api, savedAuthor } from '../api.ts';
import { ApprovalPanel } from './approval-panel.tsx';
import { ChecksView } from './checks-view.tsx';
import { Composer } from './composer.tsx';
import { DiffView } from './diff-view.tsx';
import { KnowledgeView } from './knowledge-view.tsx';
import { SidePanel } from './side-panel.tsx';
import { StatusBadge } from './status-badge.tsx';
import { ParentLink } from './subtasks-view.tsx';
import type { SessionModel } from '../session-model.ts';
import { TimelineView } from './timeline-view.tsx';
import { type Connection, useSessionLog } from './use-session-log.ts';

type Tab = 'timeline' | 'diff' | 'checks' | 'knowledge';
const tabs: { id: Tab; label: string }[] = [
  { id: 'timeline', label: 'Timeline' },
  { id: 'diff', label: 'Diff' },
  { id: 'checks', label: 'Checks' },
  { id: 'knowledge', label: 'Repo' },
];

/** `/sessions/:id`: the live timeline, the diff, checks, the side panel and the message box. */
export function SessionPage({ id }: { id: string }) {
  const log = useSessionLog(id);
  const { timeline, facts: model, version, detail, error, setError, connection } = log;
  const [tab, setTab] = useState<Tab>('timeline');
  usePerformanceMarks(timeline, version, detail);
  useTabKeys(setTab);

  const status = model.status ?? detail?.status;
  if (connection === 'missing') return <MissingSession id={id} />;
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
        <TitleRow detail={detail} model={model} status={status} connection={connection} onStop={stop} />
        <ParentLink detail={detail} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <TabBar tab={tab} setTab={setTab} model={model} />
      </div>
      <div class="session-body">
        <section class="main-col" role="tabpanel" aria-labelledby={`tab-${tab}`}>
          {tab === 'timeline' && (
            <>
              <TimelineView
                model={timeline}
                facts={model}
                version={version}
                sessionId={id}
                older={log.older}
                loadOlder={log.loadOlder}
              />
              <ApprovalPanel sessionId={id} model={model} version={version} />
              <Composer sessionId={id} model={model} version={version} status={status} />
            </>
          )}
          {tab === 'diff' && <DiffView sessionId={id} pushes={model.pushes.length} />}
          {tab === 'checks' && <ChecksView model={model} version={version} />}
          {tab === 'knowledge' && <KnowledgeView repo={detail?.repo} />}
        </section>
        <SidePanel detail={detail} model={model} timeline={timeline} version={version} />
      </div>
    </main>
  );
}

/** Marks for bench/web-render.ts and the browser tests: first events on screen, caught up with the log. */
function usePerformanceMarks(timeline: SessionModel, version: number, detail: SessionDetail | undefined): void {
  const marked = useRef({ first: false, caughtUp: false });
  useEffect(() => {
    if (!marked.current.first && timeline.items.length > 0) {
      marked.current.first = true;
      performance.mark('patchbay:first-render');
    }
    if (!marked.current.caughtUp && detail && timeline.lastSeq >= detail.lastSeq) {
      marked.current.caughtUp = true;
      performance.mark('patchbay:caught-up');
      document.body.dataset.caughtUp = 'true';
    }
  }, [version, detail]);
}

/** Keys 1-4 open the tabs and `/` the message box, unless the reader is typing or holds a modifier. */
function useTabKeys(setTab: (tab: Tab) => void): void {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement | null;
      const typing =
        target &&
        (target.tagName === 'INPUT' ||
          target.tagName === 'TEXTAREA' ||
          target.tagName === 'SELECT' ||
          target.isContentEditable);
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
}

/** An id the server does not know: said plainly, with the way back, and nothing to type into. */
function MissingSession({ id }: { id: string }) {
  return (
    <main class="session-page">
      <div class="card missing" id="missing" role="alert">
        <h1>No such session</h1>
        <p>
          This Patchbay has no session <code>{id}</code>: the link may be mistyped, or the session belongs to another
          installation.
        </p>
        <p>
          <a href="/">All sessions</a>
        </p>
      </div>
    </main>
  );
}

const connectionText: Record<Exclude<Connection, 'missing'>, string> = {
  connecting: 'connecting…',
  open: 'live',
  reconnecting: 'reconnecting…',
};

/** The title, status, autonomy level, connection, and a Stop button while the session can be stopped. */
function TitleRow({
  detail,
  model,
  status,
  connection,
  onStop,
}: {
  detail: SessionDetail | undefined;
  model: SessionModel;
  status: SessionStatus | undefined;
  connection: Exclude<Connection, 'missing'>;
  onStop: () => void;
}) {
  const stoppable = status === 'queued' || status === 'running' || status === 'waiting';
  return (
    <div class="title-row">
      <h1 id="title">{detail?.title ?? '…'}</h1>
      <span id="status">
        <StatusBadge status={status} />
      </span>
      {model.autonomy && (
        <span id="autonomy" class="autonomy" data-level={model.autonomy.level} title={autonomyNotice(model.autonomy)}>
          {model.autonomy.level}
        </span>
      )}
      <span class={`conn conn-${connection}`} aria-live="polite">
        {connectionText[connection]}
      </span>
      {stoppable && (
        <button type="button" id="stop" class="danger" onClick={onStop}>
          Stop
        </button>
      )}
    </div>
  );
}

/** The tabs, with the number of checks and of pushes on theirs. */
function TabBar({ tab, setTab, model }: { tab: Tab; setTab: (tab: Tab) => void; model: SessionModel }) {
  return (
    <div class="tabs" role="tablist">
      {tabs.map((t, i) => (
        <button
          type="button"
          role="tab"
          id={`tab-${t.id}`}
          aria-selected={tab === t.id}
          class={tab === t.id ? 'tab active' : 'tab'}
          onClick={() => setTab(t.id)}
          title={`${t.label} (${i + 1})`}
        >
          {t.label}
          {t.id === 'checks' && model.checks.length + model.verdicts.length > 0 && (
            <span class="count">{model.checks.length + model.verdicts.length}</span>
          )}
          {t.id === 'diff' && model.pushes.length > 0 && <span class="count">{model.pushes.length}</span>}
        </button>
      ))}
    </div>
  );
}
