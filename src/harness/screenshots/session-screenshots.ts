import type { EventOf } from '../../core/events.ts';
import type { SessionRun } from '../session-run.ts';
import { takeBeforeAfter, type BeforeAfter } from './before-after.ts';

/**
 * The before/after screenshots of a committed UI change, for the pull request's reviewers:
 * undefined without a publisher or an artifact store, for a change that touches no UI file, or
 * when the agent looked at no page. A failure to take them is logged, never fatal: the change
 * ships without pictures. recordScreenshots records them once the change is pushed, so a round
 * the gate sends back shows on no thread.
 */
export async function takeSessionScreenshots(run: SessionRun, commit: string): Promise<BeforeAfter | undefined> {
  const { session, deps, sandbox, workspace, signal, log } = run;
  if (!deps.artifacts || (deps.publishers ?? []).length === 0) return undefined;
  try {
    const events = await deps.store.events(session.id, { types: ['tool-start', 'tool-end'] });
    return await takeBeforeAfter(
      {
        sandbox,
        artifacts: deps.artifacts,
        sessionId: session.id,
        log,
        signal,
        approvalRules: [deps.approvals?.rules ?? {}],
      },
      { baseCommit: workspace.baseCommit, commit, events },
    );
  } catch (error) {
    if (signal.aborted) throw error;
    log.warn({ err: error }, 'no before/after screenshots of the change');
    return undefined;
  }
}

/** Records the pushed change's screenshots as the session's `ui-screenshots` event (the page and the thread show it). */
export async function recordScreenshots(run: SessionRun, event: EventOf<'ui-screenshots'>): Promise<void> {
  await run.deps.store.commitStep(run.session.id, { events: [{ event, dedupeKey: `ui-screenshots:${event.commit}` }] });
}

/**
 * The pull request body's "Screenshots" section: each page's before and after as images through
 * signed artifact links (GitHub shows them without Patchbay's token). '' when there are none.
 */
export function screenshotsSection(event: EventOf<'ui-screenshots'>, artifactUrl: (id: string) => string): string {
  const cell = (id: string | undefined, alt: string) => (id ? `![${alt}](${artifactUrl(id)})` : '(none)');
  const pages = event.pages.filter((p) => p.before || p.after);
  if (pages.length === 0) return '';
  const blocks = pages.map((page) =>
    [
      `\`${page.url}\`${page.note ? ` (${page.note.replace(/\s+/g, ' ').slice(0, 200)})` : ''}`,
      '',
      '| Before | After |',
      '|---|---|',
      `| ${cell(page.before, 'before')} | ${cell(page.after, 'after')} |`,
    ].join('\n'),
  );
  return ['## Screenshots', '', ...blocks].join('\n\n');
}
