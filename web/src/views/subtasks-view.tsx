import type { SessionDetail } from '../../../src/api/api-types.ts';
import { safeHref } from '../format.ts';
import { navigate } from './app.tsx';
import { StatusBadge } from './status-badge.tsx';

/** A link to another session's page, opened in this page (no reload). */
function SessionLink({ id, class: className, children }: { id: string; class?: string; children: string }) {
  const path = `/sessions/${encodeURIComponent(id)}`;
  return (
    <a
      class={className}
      href={path}
      onClick={(event) => {
        event.preventDefault();
        navigate(path);
      }}
    >
      {children}
    </a>
  );
}

/**
 * The sub-tasks a session fanned out into, in order: each child's title linked to its
 * own page, its status, its branch (and repository, when not this session's), its pull request and
 * why it failed. Nothing for a session without children.
 */
export function SubtasksView({ detail }: { detail: SessionDetail }) {
  if (detail.children.length === 0) return null;
  return (
    <section class="subtasks" id="subtasks" aria-label="Sub-tasks">
      <h2>Sub-tasks</h2>
      <ol class="plain">
        {detail.children.map((child) => (
          <li key={child.sessionId} data-id={child.sessionId}>
            <span class="index">{child.index}.</span>
            <SessionLink id={child.sessionId} class="title">
              {child.title}
            </SessionLink>
            <StatusBadge status={child.status} />
            <span class="meta">
              {child.repo !== detail.repo && <span class="repo">{child.repo} · </span>}
              {child.branch ? <code class="branch">{child.branch}</code> : <span>no branch yet</span>}
              {safeHref(child.prUrl) && (
                <>
                  {' · '}
                  <a href={safeHref(child.prUrl)} rel="noreferrer" target="_blank">
                    pull request
                  </a>
                </>
              )}
              {child.status === 'failed' && child.error && <span class="error-text"> · {child.error}</span>}
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}

/** For a sub-task: the session that spawned it, linked. Nothing for a session people started. */
export function ParentLink({ detail }: { detail: SessionDetail | undefined }) {
  if (!detail?.parent) return null;
  return (
    <p class="parent-link" id="parent">
      Sub-task of{' '}
      <SessionLink id={detail.parent.id} class="title">
        {detail.parent.title}
      </SessionLink>
    </p>
  );
}
