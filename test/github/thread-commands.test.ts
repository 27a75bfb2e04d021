import { describe, expect, it } from 'vitest';
import { threadCommand } from '../../integrations/github/thread-commands.ts';
import type { Actor } from '../../src/core/actor.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';

const thread: ThreadRef = { source: 'github', owner: 'acme', repo: 'widgets', number: 7, kind: 'pull' };
const actor: Actor = { source: 'github', id: '42', name: 'bob', githubLogin: 'bob' };
const running = { id: 's', status: 'running' as const, pendingQuestion: null };
const sessions = { events: async () => [] };

describe('comments that decide for the thread’s session', async () => {
  it('`allow <host> for this repository` from someone with write access is a vouched egress-allow', async () => {
    expect(
      await threadCommand('allow pkg.example.com:8443 for this repository', running, thread, actor, sessions),
    ).toEqual({
      kind: 'egress-allow',
      thread,
      actor,
      host: 'pkg.example.com',
      port: 8443,
      scope: 'repository',
      vouched: true,
    });
  });

  it('is nothing without a session, and ordinary words stay a message', async () => {
    expect(
      await threadCommand('allow pkg.example.com for this session', undefined, thread, actor, sessions),
    ).toBeUndefined();
    expect(await threadCommand('please fix the allow list', running, thread, actor, sessions)).toBeUndefined();
  });

  it('an approve without an open request is not a decision', async () => {
    expect(await threadCommand('approve', running, thread, actor, sessions)).toBeUndefined();
  });
});
