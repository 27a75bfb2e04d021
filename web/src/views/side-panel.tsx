import type { SessionDetail } from '../../../src/api/api-types.ts';
import { costText, safeHref, tokens } from '../format.ts';
import type { SessionModel } from '../session-model.ts';
import { ProcessesView } from './processes-view.tsx';
import { SubtasksView } from './subtasks-view.tsx';

/** Repo, branch, base, model, tokens, cost, background processes, participants, the threads the session is followed in and its sub-tasks. */
export function SidePanel({
  detail,
  model,
  timeline,
}: {
  detail: SessionDetail | undefined;
  model: SessionModel;
  /** The log's pages read so far (the facts hold no tool steps): where the background processes are read. */
  timeline: SessionModel;
  version: number;
}) {
  if (!detail) return <aside class="side card muted">Loading…</aside>;
  const branch = model.workspace?.branch ?? detail.branch;
  const base = model.workspace?.baseBranch ?? detail.baseBranch;
  const models = detail.cost.byModel.map((m) => m.model);
  const pr = model.pr ?? (detail.result?.prUrl ? { url: detail.result.prUrl, number: 0, commit: '' } : undefined);
  return (
    <aside class="side card" id="side">
      <dl>
        <dt>Repository</dt>
        <dd class="repo">{detail.repo}</dd>
        <dt>Branch</dt>
        <dd>{branch ? <code>{branch}</code> : <span class="muted">not yet</span>}</dd>
        <dt>Base</dt>
        <dd>
          {base ? <code>{base}</code> : <span class="muted">default branch</span>}
          {model.workspace && <span class="muted"> at {model.workspace.baseCommit.slice(0, 10)}</span>}
        </dd>
        <dt>Model</dt>
        <dd>{models.length ? models.join(', ') : <span class="muted">no turns yet</span>}</dd>
        <dt>Tokens</dt>
        <dd id="tokens">
          {tokens(detail.usage.inputTokens + detail.usage.cacheReadTokens + detail.usage.cacheWriteTokens)} in ·{' '}
          {tokens(detail.usage.outputTokens)} out
        </dd>
        <dt>Cost</dt>
        <dd id="cost">{costText(detail.cost.usd)}</dd>
        <dt>Pull request</dt>
        <dd id="pr">
          {pr && safeHref(pr.url) ? (
            <a href={safeHref(pr.url)} rel="noreferrer" target="_blank">
              {pr.number ? `#${pr.number}` : pr.url}
            </a>
          ) : (
            <span class="muted">none</span>
          )}
        </dd>
        <dt>Processes</dt>
        <dd>
          <ProcessesView items={timeline.items} running={model.status === 'running'} />
        </dd>
        <dt>People</dt>
        <dd>
          <ul class="plain">
            {[...model.participants.values()].map((a) => (
              <li>
                {a.name} <span class="muted">({a.source})</span>
              </li>
            ))}
          </ul>
        </dd>
        <dt>Threads</dt>
        <dd>
          <ThreadLinks threads={detail.threads} />
        </dd>
      </dl>
      <SubtasksView detail={detail} />
      {detail.error && !saidInTimeline(timeline, detail.error) && <p class="error">{detail.error}</p>}
    </aside>
  );
}

/** Whether the timeline on screen already says the failure (its error note): then it is said once, there. */
function saidInTimeline(timeline: SessionModel, error: string): boolean {
  return timeline.items.some((item) => item.kind === 'note' && item.text.includes(error));
}

/** The threads the session is followed in, each a link where it has one. */
function ThreadLinks({ threads }: { threads: SessionDetail['threads'] }) {
  return (
    <ul class="plain" id="threads">
      {threads.map((t) => {
        const href = safeHref(t.url);
        return (
          <li>
            {href ? (
              <a href={href} rel="noreferrer" target="_blank">
                {t.label}
              </a>
            ) : (
              t.label
            )}
          </li>
        );
      })}
    </ul>
  );
}
