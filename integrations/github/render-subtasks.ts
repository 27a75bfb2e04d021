import { repoShortName } from '../../src/core/repo-ref.ts';
import type { SessionStatus } from '../../src/core/session-status.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';

/**
 * The sub-tasks section of a progress comment: one list item per child session, with
 * its status, its title linked to its own page, its repository when it is not the parent's, and its
 * pull request or branch. A title is the agent's words: it goes in a code span, where GitHub makes
 * no mention, link or formatting of it. Empty for a session without children.
 */
export function renderSubtasks(
  children: readonly SubtaskLine[],
  parent: { repo: string; pageUrl: (sessionId: string) => string },
): string {
  if (children.length === 0) return '';
  const items = children.map((child) => {
    const where = child.repo === parent.repo ? '' : ` · ${code(repoShortName(child.repo))}`;
    const outcome = child.prUrl ? ` · [pull request](${child.prUrl})` : child.branch ? ` · ${code(child.branch)}` : '';
    const why = child.status === 'failed' && child.error ? `: ${clip(oneLine(child.error), 300)}` : '';
    const title = `[${code(oneLine(child.title))}](${parent.pageUrl(child.sessionId)})`;
    return `${child.index}. ${statusIcon(child.status)} ${title}${where} · ${child.status}${why}${outcome}`;
  });
  return `**Sub-tasks**\n\n${items.join('\n')}`;
}

function statusIcon(status: SessionStatus): string {
  switch (status) {
    case 'queued':
      return '⏳';
    case 'running':
      return '🔄';
    case 'waiting':
      return '❓';
    case 'completed':
      return '✅';
    case 'failed':
      return '❌';
    case 'cancelled':
      return '⏹️';
    default: {
      const _never: never = status;
      return _never;
    }
  }
}

/** Inline code that holds any text: a fence longer than the longest run of backticks in it. */
function code(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return longest > 0 ? `${fence} ${text} ${fence}` : `${fence}${text}${fence}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
