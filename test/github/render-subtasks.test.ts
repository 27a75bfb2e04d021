import { describe, expect, it } from 'vitest';
import { renderProgress } from '../../integrations/github/render-progress.ts';
import { renderSubtasks } from '../../integrations/github/render-subtasks.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';

const repo = 'https://github.com/acme/widgets';
const children: SubtaskLine[] = [
  { sessionId: 'c1', index: 1, title: 'Add the API field', repo, status: 'completed', branch: 'patchbay/x-sub-1' },
  {
    sessionId: 'c2',
    index: 2,
    title: 'Use it in the client @octocat `now`',
    repo: 'https://github.com/acme/client.git',
    status: 'running',
    branch: 'patchbay/x-sub-2',
    prUrl: 'https://github.com/acme/client/pull/4',
  },
  { sessionId: 'c3', index: 3, title: 'Docs', repo, status: 'failed', branch: null, error: 'checks failed:\nlint' },
  { sessionId: 'c4', index: 4, title: 'Later', repo, status: 'queued', branch: null },
];
const pageUrl = (id: string) => `http://patchbay.test/sessions/${id}`;

describe('the sub-tasks in a GitHub progress comment', () => {
  it('lists each child with its status, its page, its branch or pull request, and the repository when it is another', () => {
    expect(renderSubtasks(children, { repo, pageUrl }).split('\n')).toEqual([
      '**Sub-tasks**',
      '',
      '1. ✅ [`Add the API field`](http://patchbay.test/sessions/c1) · completed · `patchbay/x-sub-1`',
      // The agent's title is code: no mention, no formatting; a backtick in it gets a longer fence.
      '2. 🔄 [`` Use it in the client @octocat `now` ``](http://patchbay.test/sessions/c2) · `acme/client` · running · [pull request](https://github.com/acme/client/pull/4)',
      '3. ❌ [`Docs`](http://patchbay.test/sessions/c3) · failed: checks failed: lint',
      '4. ⏳ [`Later`](http://patchbay.test/sessions/c4) · queued',
    ]);
  });

  it('goes under the status of the comment, and a session without children has no section', () => {
    const view = {
      session: { status: 'running' as const, pendingQuestion: null, error: null, result: null },
      sessionUrl: pageUrl('p'),
      mention: '@patchbay',
    };
    const body = renderProgress({ ...view, subtasks: renderSubtasks(children.slice(0, 1), { repo, pageUrl }) });
    expect(body).toBe(
      '🔄 Working on it.\n\n[Session](http://patchbay.test/sessions/p)\n\n**Sub-tasks**\n\n1. ✅ [`Add the API field`](http://patchbay.test/sessions/c1) · completed · `patchbay/x-sub-1`',
    );
    expect(renderSubtasks([], { repo, pageUrl })).toBe('');
    expect(renderProgress(view)).not.toContain('Sub-tasks');
  });
});
