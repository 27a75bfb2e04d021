import { expect } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { Patchbay } from '../../src/main.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { git, type RemoteFixture } from '../git/git-fixture.ts';

/**
 * The tool-loop scenario every sandbox provider must pass: the model writes CHANGELOG.md, checks it
 * with a shell command, and finishes; Patchbay commits it as the requester and pushes the branch.
 */
export const changelogRequester: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

export function changelogModel() {
  return createScriptedProvider({
    scenario: (messages: readonly ModelMessage[]) =>
      [
        {
          text: 'I will add a changelog.',
          toolCalls: [{ name: 'write_file', input: { path: 'CHANGELOG.md', content: '# Changes\n\n- first\n' } }],
        },
        { toolCalls: [{ name: 'run_shell', input: { command: 'cat CHANGELOG.md && git status --short' } }] },
        { text: 'Added CHANGELOG.md and checked it with git status.' },
      ][messages.filter((m) => m.role === 'assistant').length] ?? { text: 'done' },
  });
}

export const changelogEvents = [
  'session-created',
  'user-message',
  'status-changed',
  'workspace-ready',
  'knowledge-loaded',
  'task-routed',
  'autonomy-set',
  'assistant-message',
  'usage',
  'tool-start',
  'tool-end',
  'usage',
  'tool-start',
  'tool-end',
  'assistant-message',
  'usage',
  // The repo names no checks; the verifier still judges the commit.
  'verification-finished',
  'usage',
  'diff-updated',
  'branch-pushed',
  'review-gate',
  'status-changed',
];

/** What the scenario must leave behind: the pushed commit, its author, the shell output, the event log. */
export async function expectChangelogPushed(
  app: Patchbay,
  remote: RemoteFixture,
  session: SessionRecord,
  model: ReturnType<typeof changelogModel>,
): Promise<void> {
  expect(session.status, session.error ?? '').toBe('completed');
  expect(session.branch).toMatch(/^patchbay\/[0-9a-f]{8}-add-a-changelog$/);

  const tip = await remote.remoteBranch(session.branch!);
  expect(tip).toBe(session.result?.commit);
  expect(await git(remote.remote, 'show', `${tip}:CHANGELOG.md`)).toBe('# Changes\n\n- first');
  expect(await git(remote.remote, 'log', '-1', '--format=%an <%ae>|%cn', tip)).toBe(
    'Alice Doe <alice@example.com>|Patchbay',
  );
  expect(await remote.remoteBranch('main')).toBe(await git(remote.remote, 'rev-parse', `${tip}~1`));

  const shell = model.requests
    .at(-1)!
    .messages.filter((m) => m.role === 'tool')
    .find((m) => m.role === 'tool' && m.name === 'run_shell');
  expect(shell && shell.role === 'tool' && shell.content).toContain('?? CHANGELOG.md');

  const types = (await app.store.events(session.id)).map((e) => e.event.type);
  expect(types).toEqual(changelogEvents);
}
