import type { SessionStatus } from '../../src/core/session-status.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';
import { branchLink } from './repo-links.ts';
import { repoShortName } from '../../src/core/repo-ref.ts';
import { truncate } from './slack-blocks.ts';
import { escapeMrkdwn } from './slack-text.ts';

/** The emoji a status message (the session's, or one of its sub-tasks') starts with. */
export function statusIcon(status: SessionStatus): string {
  switch (status) {
    case 'completed':
      return ':white_check_mark:';
    case 'failed':
      return ':x:';
    case 'cancelled':
      return ':octagonal_sign:';
    case 'waiting':
      return ':question:';
    case 'queued':
    case 'running':
      return ':hourglass_flowing_sand:';
    default: {
      const _never: never = status;
      return _never;
    }
  }
}

/**
 * The lines the status message lists a session's sub-tasks with, one per child: its
 * status, its title linked to its own page, and its pull request or pushed branch, so the thread
 * that asked shows how the fanned-out work stands. Empty for a session without children.
 */
export function subtaskLines(
  children: readonly SubtaskLine[],
  parent: { repo: string },
  links: { publicUrl: string; repoBases: readonly string[] },
): string {
  return children.map((child) => subtaskLine(child, parent.repo, links)).join('\n');
}

function subtaskLine(
  child: SubtaskLine,
  parentRepo: string,
  links: { publicUrl: string; repoBases: readonly string[] },
): string {
  const page = `${links.publicUrl}/sessions/${encodeURIComponent(child.sessionId)}`;
  const title = `<${page}|${escapeMrkdwn(oneLine(child.title))}>`;
  const where = child.repo === parentRepo ? '' : ` · *${escapeMrkdwn(repoShortName(child.repo))}*`;
  const outcome = child.prUrl
    ? ` · <${child.prUrl}|pull request>`
    : child.branch
      ? ` · ${branchLink(child.repo, child.branch, links.repoBases)}`
      : '';
  const why = child.status === 'failed' && child.error ? `: ${escapeMrkdwn(truncate(oneLine(child.error), 200))}` : '';
  return `${statusIcon(child.status)} ${child.index}. ${title}${where} · ${child.status}${why}${outcome}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
