import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { SessionList } from '../../../src/api/api-types.ts';
import type { SessionStatus } from '../../../src/core/session-status.ts';
import { api, saveAuthorName, savedAuthor } from '../api.ts';
import { ageOf, safeHref } from '../format.ts';
import { openListStream } from '../live-stream.ts';
import { navigate } from './app.tsx';
import { StatusBadge } from './status-badge.tsx';

const statuses: SessionStatus[] = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'];

function filterFromUrl(): { status?: SessionStatus | undefined; repo?: string | undefined } {
  const query = new URLSearchParams(location.search);
  const status = query.get('status') as SessionStatus | null;
  const repo = query.get('repo');
  return { ...(status && statuses.includes(status) && { status }), ...(repo && { repo }) };
}

/** `/`: sessions newest first, filtered by status and repo, kept current by the notice stream. */
export function ListPage() {
  const [filter, setFilter] = useState(filterFromUrl);
  const [list, setList] = useState<SessionList | undefined>();
  const [error, setError] = useState('');
  const filterRef = useRef(filter);
  filterRef.current = filter;

  const load = useCallback(() => {
    api.list(filterRef.current).then(
      (next) => {
        setList(next);
        setError('');
      },
      (err: Error) => setError(err.message),
    );
  }, []);

  useEffect(load, [filter]);
  useEffect(() => {
    let timer: number | undefined;
    // Bursts of changes (a run writes many events) become one read.
    const close = openListStream(() => {
      clearTimeout(timer);
      timer = window.setTimeout(load, 300);
    });
    const tick = window.setInterval(() => setList((l) => l && { ...l }), 30_000);
    return () => {
      close();
      clearTimeout(timer);
      clearInterval(tick);
    };
  }, []);

  const change = (next: Filter) => {
    const query = new URLSearchParams();
    if (next.status) query.set('status', next.status);
    if (next.repo) query.set('repo', next.repo);
    history.replaceState(null, '', `/${query.size ? `?${query}` : ''}`);
    setFilter(next);
  };

  return (
    <main class="list-page">
      <NewSessionForm />
      <section class="card">
        <ListHead filter={filter} repos={list?.repos ?? []} onChange={change} />
        {error && <p class="error">{error}</p>}
        {!list && !error && <p class="muted">Loading…</p>}
        {list && list.sessions.length === 0 && (
          <p class="muted">No sessions{filter.status || filter.repo ? ' match' : ' yet'}.</p>
        )}
        <ul id="sessions" class="sessions">
          {list?.sessions.map((s) => (
            <SessionRow session={s} key={s.id} />
          ))}
        </ul>
      </section>
    </main>
  );
}

type Filter = { status?: SessionStatus | undefined; repo?: string | undefined };

/** The list's heading: the link to Insights, and the status and repository filters. */
function ListHead({ filter, repos, onChange }: { filter: Filter; repos: string[]; onChange: (next: Filter) => void }) {
  return (
    <div class="list-head">
      <h2>Sessions</h2>
      <a
        id="insights-link"
        href="/insights"
        onClick={(e) => {
          e.preventDefault();
          navigate('/insights');
        }}
      >
        Insights
      </a>
      <label>
        Status{' '}
        <select
          id="filter-status"
          value={filter.status ?? ''}
          onChange={(e) =>
            onChange({ ...filter, status: (e.currentTarget.value || undefined) as SessionStatus | undefined })
          }
        >
          <option value="">all</option>
          {statuses.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
      </label>
      <label>
        Repository{' '}
        <select
          id="filter-repo"
          value={filter.repo ?? ''}
          onChange={(e) => onChange({ ...filter, repo: e.currentTarget.value || undefined })}
        >
          <option value="">all</option>
          {repos.map((r) => (
            <option value={r}>{r}</option>
          ))}
        </select>
      </label>
    </div>
  );
}

/** One session: its title linking to its page, its status, and who asked, where, when, its checks and PR. */
function SessionRow({ session: s }: { session: SessionList['sessions'][number] }) {
  return (
    <li data-id={s.id}>
      <a
        class="title"
        href={`/sessions/${encodeURIComponent(s.id)}`}
        onClick={(e) => {
          e.preventDefault();
          navigate(`/sessions/${encodeURIComponent(s.id)}`);
        }}
      >
        {s.title}
      </a>
      <StatusBadge status={s.status} />
      <span class="meta">
        {s.parentId && <span class="sub-task">sub-task · </span>}
        <span class="repo">{s.repo}</span> · {s.requester.name} · {s.surfaces.join(', ')} ·{' '}
        <time dateTime={s.createdAt}>{ageOf(s.createdAt)}</time>
        {s.checks !== 'none' && (
          <>
            {' · '}
            <span class={`checks checks-${s.checks}`}>checks {s.checks}</span>
          </>
        )}
        {safeHref(s.prUrl ?? undefined) && (
          <>
            {' · '}
            <a href={safeHref(s.prUrl ?? undefined)} rel="noreferrer" target="_blank">
              pull request
            </a>
          </>
        )}
      </span>
    </li>
  );
}

function NewSessionForm() {
  const [repo, setRepo] = useState('');
  const [prompt, setPrompt] = useState('');
  const [baseBranch, setBaseBranch] = useState('');
  const [name, setName] = useState(savedAuthor()?.name ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError('');
    saveAuthorName(name);
    try {
      const author = savedAuthor();
      const started = await api.start({
        repo: repo.trim(),
        prompt: prompt.trim(),
        ...(baseBranch.trim() && { baseBranch: baseBranch.trim() }),
        ...(author && { author }),
      });
      navigate(`/sessions/${encodeURIComponent(started.id)}`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <form class="card new-session" onSubmit={submit}>
      <h2>New session</h2>
      <div class="grid">
        <label for="repo">Repository</label>
        <input
          id="repo"
          required
          placeholder="https://github.com/owner/repo"
          value={repo}
          onInput={(e) => setRepo(e.currentTarget.value)}
        />
        <label for="base">Base branch</label>
        <input
          id="base"
          placeholder="default branch"
          value={baseBranch}
          onInput={(e) => setBaseBranch(e.currentTarget.value)}
        />
        <label for="prompt">Task</label>
        <textarea
          id="prompt"
          required
          rows={3}
          placeholder="What should change?"
          value={prompt}
          onInput={(e) => setPrompt(e.currentTarget.value)}
        />
        <label for="name">Your name</label>
        <input
          id="name"
          placeholder="shown with your messages"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        Start
      </button>
    </form>
  );
}
