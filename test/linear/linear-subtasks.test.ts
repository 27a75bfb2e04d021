import { describe, expect, it } from 'vitest';
import { planWithSubtasks, subtaskSteps } from '../../integrations/linear/linear-subtasks.ts';
import { initialPlan } from '../../integrations/linear/render-activities.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';

const repo = 'https://github.com/acme/widgets';
const line = (index: number, status: SubtaskLine['status'], more: Partial<SubtaskLine> = {}): SubtaskLine => ({
  sessionId: `c${index}`,
  index,
  title: `Part ${index}`,
  repo,
  status,
  branch: `patchbay/x-sub-${index}`,
  ...more,
});

describe('the sub-tasks in the Linear plan', () => {
  it('is a step per child with the status Linear knows, after the session’s own work', () => {
    const steps = subtaskSteps(
      [
        line(1, 'queued'),
        line(2, 'running'),
        line(3, 'waiting'),
        line(4, 'completed', {
          repo: 'https://github.com/acme/client',
          prUrl: 'https://github.com/acme/client/pull/4',
        }),
        line(5, 'failed', { title: 'Two\nlines' }),
        line(6, 'cancelled'),
      ],
      { repo },
    );
    expect(steps).toEqual([
      { content: 'Sub-task 1: Part 1', status: 'pending' },
      { content: 'Sub-task 2: Part 2', status: 'inProgress' },
      { content: 'Sub-task 3: Part 3', status: 'inProgress' },
      { content: 'Sub-task 4: Part 4 (acme/client), https://github.com/acme/client/pull/4', status: 'completed' },
      { content: 'Sub-task 5: Two lines: failed', status: 'canceled' },
      { content: 'Sub-task 6: Part 6', status: 'canceled' },
    ]);
    const plan = planWithSubtasks(initialPlan(), steps.slice(0, 2));
    expect(plan.map((s) => s.content)).toEqual([
      'Prepare the workspace',
      'Make the changes',
      'Sub-task 1: Part 1',
      'Sub-task 2: Part 2',
      'Commit and push the branch',
      'Open the pull request',
    ]);
    expect(planWithSubtasks(initialPlan(), [])).toEqual(initialPlan());
  });
});
