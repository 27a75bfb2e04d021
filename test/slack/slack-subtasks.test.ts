import { describe, expect, it } from 'vitest';
import { statusMessage } from '../../integrations/slack/slack-blocks.ts';
import { subtaskLines } from '../../integrations/slack/slack-subtasks.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';
import { blockKitProblems } from '../fakes/slack-block-kit.ts';

const repo = 'https://github.com/acme/widgets';
const links = { publicUrl: 'http://patchbay.test', repoBases: ['https://github.com'] };

describe('the sub-tasks in the Slack status message', () => {
  it('lists each child: status, title linked to its page, its repository when another, its pull request or branch', () => {
    const children: SubtaskLine[] = [
      { sessionId: 'c1', index: 1, title: 'API <field> & co', repo, status: 'running', branch: 'patchbay/x-sub-1' },
      {
        sessionId: 'c2',
        index: 2,
        title: 'Client',
        repo: 'https://github.com/acme/client',
        status: 'completed',
        branch: 'patchbay/x-sub-2',
        prUrl: 'https://github.com/acme/client/pull/4',
      },
      { sessionId: 'c3', index: 3, title: 'Docs', repo, status: 'failed', branch: null, error: 'no <repo>' },
    ];
    expect(subtaskLines(children, { repo }, links).split('\n')).toEqual([
      ':hourglass_flowing_sand: 1. <http://patchbay.test/sessions/c1|API &lt;field&gt; &amp; co> · running · <https://github.com/acme/widgets/tree/patchbay/x-sub-1|patchbay/x-sub-1>',
      ':white_check_mark: 2. <http://patchbay.test/sessions/c2|Client> · *acme/client* · completed · <https://github.com/acme/client/pull/4|pull request>',
      ':x: 3. <http://patchbay.test/sessions/c3|Docs> · failed: no &lt;repo&gt;',
    ]);
  });

  it('puts them in a section of their own that Block Kit takes, at any number of children', () => {
    const many: SubtaskLine[] = Array.from({ length: 60 }, (_, i) => ({
      sessionId: `child-${i}`,
      index: i + 1,
      title: 'A long title '.repeat(9),
      repo,
      status: 'queued',
      branch: `patchbay/a-long-branch-name-sub-${i + 1}`,
    }));
    const message = statusMessage({
      repo: 'acme/widgets',
      step: 'Waiting for sub-tasks',
      elapsed: '5s',
      link: 'http://patchbay.test/sessions/p',
      active: true,
      icon: ':hourglass_flowing_sand:',
      subtasks: subtaskLines(many, { repo }, links),
    });
    expect(blockKitProblems(message.blocks)).toEqual([]);
    expect(message.blocks).toHaveLength(3); // status, sub-tasks, the Stop button
    expect(message.text).toContain('60. <http://patchbay.test/sessions/child-59|');
  });
});
