import { repoShortName } from '../../src/core/repo-ref.ts';
import type { SessionStatus } from '../../src/core/session-status.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';
import type { PlanStep } from './linear-api.ts';

/** Where the sub-tasks' steps go in the plan: after this step, the parent's own work. */
const AFTER_STEP = 'Make the changes';

/**
 * A session's sub-tasks as steps of its Linear agent session's plan: one per child, in
 * order, named by its title (with its repository when it is not the parent's, and its pull request
 * once it has one), its status the child's. The parent's steps are kept as they are.
 */
export function subtaskSteps(children: readonly SubtaskLine[], parent: { repo: string }): PlanStep[] {
  return children.map((child) => {
    const where = child.repo === parent.repo ? '' : ` (${repoShortName(child.repo)})`;
    const failed = child.status === 'failed' ? ': failed' : '';
    const pr = child.prUrl ? `, ${child.prUrl}` : '';
    return {
      content: `Sub-task ${child.index}: ${child.title.replace(/\s+/g, ' ').trim()}${where}${failed}${pr}`,
      status: stepStatus(child.status),
    };
  });
}

/** The plan Linear shows: the session's own steps with its sub-tasks' steps after its own work. */
export function planWithSubtasks(plan: readonly PlanStep[], subtasks: readonly PlanStep[]): PlanStep[] {
  if (subtasks.length === 0) return [...plan];
  const at = plan.findIndex((step) => step.content === AFTER_STEP);
  const cut = at < 0 ? plan.length : at + 1;
  return [...plan.slice(0, cut), ...subtasks, ...plan.slice(cut)];
}

function stepStatus(status: SessionStatus): PlanStep['status'] {
  switch (status) {
    case 'queued':
      return 'pending';
    case 'running':
    case 'waiting':
      return 'inProgress';
    case 'completed':
      return 'completed';
    case 'failed':
    case 'cancelled':
      return 'canceled';
    default: {
      const _never: never = status;
      return _never;
    }
  }
}
