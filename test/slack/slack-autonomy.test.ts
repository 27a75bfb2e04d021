import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, blockAction, envelope, message } from '../fakes/fake-slack-events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import type { ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';
const REPO = '<https://github.com/acme/widgets|acme/widgets>';

/** The text of the last message people gave the model, and the model's messages since. */
function sinceLastUser(messages: readonly ModelMessage[]) {
  const index = messages.findLastIndex((m) => m.role === 'user');
  const user = messages[index];
  return { text: user?.role === 'user' ? user.content : '', after: messages.slice(index + 1) };
}

const lastTool = (after: readonly ModelMessage[]) => {
  const last = after.at(-1);
  return last?.role === 'tool' ? last.content : undefined;
};

/**
 * Plan-first: tries to write before the go (refused), then plans; revises on feedback; on "go"
 * writes NOTES.txt and finishes.
 */
function planScenario(messages: readonly ModelMessage[]): ScriptedTurn {
  const { text, after } = sinceLastUser(messages);
  if (text.includes('> go')) {
    if (after.length === 0)
      return { toolCalls: [{ name: 'write_file', input: { path: 'NOTES.txt', content: 'planned notes\n' } }] };
    return { text: 'Created NOTES.txt as planned.' };
  }
  if (text.includes('use NOTES.txt instead')) return { text: 'Revised plan: create NOTES.txt with one line.' };
  if (after.length === 0)
    return { toolCalls: [{ name: 'write_file', input: { path: 'NOTES.md', content: 'too early\n' } }] };
  if (lastTool(after)?.includes('waiting for go') && after.length === 2)
    return { toolCalls: [{ name: 'read_file', input: { path: 'README.md' } }] };
  return { text: 'Plan: create NOTES.md with one line.' };
}

/** Ask-before-push and full: one file written, or one command run, then done. */
function workScenario(messages: readonly ModelMessage[]): ScriptedTurn {
  const { text, after } = sinceLastUser(messages);
  if (text.includes('clean the scratch file')) {
    if (after.length === 0)
      return { toolCalls: [{ name: 'run_shell', input: { command: 'rm -f /tmp/patchbay-scratch; echo removed' } }] };
    return { text: 'Removed the scratch file.' };
  }
  if (after.length === 0)
    return { toolCalls: [{ name: 'write_file', input: { path: 'PUSHED.md', content: 'pushed after approval\n' } }] };
  return { text: 'Added PUSHED.md.' };
}

type Button = { action_id: string; value: string; text: { text: string } };

describe('autonomy set by the requester in Slack (fake Slack, real sandbox, scripted model)', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture();
  });
  afterAll(() => f.dispose());

  const mention = async (text: string) => {
    const event = appMention({ user: 'U0ALICE01', text });
    expect((await f.postEvent(envelope(event))).status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, event.ts), 'the session');
    return { ts: event.ts, session };
  };
  const reply = async (ts: string, user: string, text: string) =>
    expect((await f.postEvent(envelope(message({ user, text, threadTs: ts })))).status).toBe(200);
  const eventsOf = async (id: string, type: string) =>
    (await f.app.store.events(id, { types: [type] })).map((e) => e.event);

  it('plan first: the plan is asked in the thread, nothing changes before the go, feedback revises it, go does the work', {
    timeout: 120_000,
  }, async () => {
    f.setScenario(planScenario);
    const asked = f.model.requests.length;
    const { ts, session } = await mention(`plan first: add notes to ${REPO}`);
    expect(session.prompt).not.toMatch(/plan first/i);
    const plan = await waitForPost(f.slack, CHANNEL, ts, (t) => t.includes('Plan: create NOTES.md'), 'the plan');
    expect(plan.text).toContain('Reply go to start, or say what to change.');
    const waiting = await waitForStatus(f.app, session.id, ['waiting']);
    expect(waiting.pendingQuestion?.questionId).toBe('plan:1');
    expect(await eventsOf(session.id, 'autonomy-set')).toEqual([
      { type: 'autonomy-set', level: 'plan-first', source: 'session' },
    ]);

    // Nothing changed before the go: the write was refused, nothing was committed or pushed.
    const workspace = join(f.app.dataDir, 'workspaces', session.id);
    expect(existsSync(join(workspace, 'README.md'))).toBe(true);
    expect(existsSync(join(workspace, 'NOTES.md'))).toBe(false);
    const ends = (await eventsOf(session.id, 'tool-end')).map((e) => (e.type === 'tool-end' ? e : undefined));
    expect(ends.map((e) => [e?.name, e?.isError, e?.output.slice(0, 26)])).toEqual([
      ['write_file', true, 'Refused: waiting for go. T'],
      ['read_file', false, expect.any(String)],
    ]);
    expect(await eventsOf(session.id, 'diff-updated')).toEqual([]);
    expect(await eventsOf(session.id, 'branch-pushed')).toEqual([]);
    // The agent was told to plan first, and (further down) to carry the plan out after the go.
    expect(f.model.requests[asked]!.system).toContain('# Plan first');

    // Feedback is not a go: the agent revises the plan and asks again.
    await reply(ts, 'U0ALICE01', 'use NOTES.txt instead');
    await waitForPost(f.slack, CHANNEL, ts, (t) => t.includes('Revised plan: create NOTES.txt'), 'the revised plan');
    expect((await waitForStatus(f.app, session.id, ['waiting'])).pendingQuestion?.questionId).toBe('plan:2');
    expect(await eventsOf(session.id, 'plan-approved')).toEqual([]);
    expect(existsSync(join(workspace, 'NOTES.txt'))).toBe(false);

    await reply(ts, 'U0ALICE01', 'go');
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');
    expect(await eventsOf(session.id, 'plan-approved')).toMatchObject([
      { questionId: 'plan:2', actor: { id: 'U0ALICE01' } },
    ]);
    expect(await f.remote.remoteBranch(done.branch!)).not.toBe('');
    expect(existsSync(join(workspace, 'NOTES.txt'))).toBe(true);
    expect(existsSync(join(workspace, 'NOTES.md'))).toBe(false);
    expect(f.model.requests.at(-1)!.system).toContain('# Plan approved');
    await waitForPost(f.slack, CHANNEL, ts, (t) => t.includes('Created NOTES.txt as planned.'), 'the result');
  });

  const approvalPost = async (ts: string) => {
    const post = await waitFor(
      async () => f.slack.thread(CHANNEL, ts).find((m) => m.text.includes('Approval needed')),
      'the push approval request',
    );
    const buttons = (post.blocks as { type: string; elements?: Button[] }[]).find((b) => b.type === 'actions')!
      .elements!;
    return { post, approve: buttons[0]!, deny: buttons[1]! };
  };
  const click = (ts: string, button: Button, messageTs: string) =>
    f.postAction(
      blockAction({ user: 'U0ALICE01', actionId: button.action_id, value: button.value, messageTs, threadTs: ts }),
    );

  it('ask before push: nothing is pushed until the approval; a reply instead asks again for the new work; approved, the branch is pushed', {
    timeout: 120_000,
  }, async () => {
    f.setScenario(workScenario);
    const { ts, session } = await mention(`ask before push: add a file to ${REPO}`);
    const first = await approvalPost(ts);
    expect(first.post.text).toMatch(/git push origin \S+/);
    expect(first.post.text).toContain('Approving lets the harness push');
    const waiting = await waitForStatus(f.app, session.id, ['waiting']);
    expect(await f.remote.remoteBranch(waiting.branch!)).toBe('');
    expect(await eventsOf(session.id, 'branch-pushed')).toEqual([]);

    // A message instead of a decision: the request closes, the agent works on, and the push is asked again.
    await reply(ts, 'U0ALICE01', 'also keep it short');
    const second = await waitFor(
      async () => f.slack.thread(CHANNEL, ts).find((m) => m.text.includes('Approval needed') && m.ts !== first.post.ts),
      'the second push request',
    );
    await waitForStatus(f.app, session.id, ['waiting']);
    expect(await f.remote.remoteBranch(waiting.branch!)).toBe('');
    const buttons = (second.blocks as { type: string; elements?: Button[] }[]).find((b) => b.type === 'actions')!
      .elements!;
    expect((await click(ts, buttons[0]!, second.ts)).status).toBe(200);
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');
    expect(await f.remote.remoteBranch(done.branch!)).not.toBe('');
    const decided = await eventsOf(session.id, 'approval-decided');
    expect(decided).toMatchObject([
      { decision: 'denied', reason: 'the thread replied instead of deciding (the reply follows)' },
      { decision: 'approved', actor: { id: 'U0ALICE01' } },
    ]);
    expect(new Set(decided.map((d) => d.type === 'approval-decided' && d.requestId)).size).toBe(2);
    // The agent worked twice (the task, the reply); the approval resumed the push, not the work.
    expect(await eventsOf(session.id, 'tool-end')).toHaveLength(2);
  });

  it('ask before push: denied, the work stays unpushed and the thread is told why', { timeout: 120_000 }, async () => {
    f.setScenario(workScenario);
    const { ts, session } = await mention(`ask before push: add a file to ${REPO}`);
    const request = await approvalPost(ts);
    await waitForStatus(f.app, session.id, ['waiting']);
    expect((await click(ts, request.deny, request.post.ts)).status).toBe(200);
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');
    expect(done.result?.unpushed).toMatch(/^Not pushed: Alice Doe denied the push: denied in Slack without a reason\./);
    expect(await f.remote.remoteBranch(done.branch!)).toBe('');
    expect(await eventsOf(session.id, 'branch-pushed')).toEqual([]);
    await waitForPost(f.slack, CHANNEL, ts, (t) => t.includes('Not pushed: Alice Doe denied the push'), 'the denial');
  });

  it('full autonomy: the risky command runs without a request; by default the same command is held', {
    timeout: 120_000,
  }, async () => {
    f.setScenario(workScenario);
    const full = await mention(`full autonomy: clean the scratch file in ${REPO}`);
    const done = await waitForStatus(f.app, full.session.id, ['completed', 'failed', 'cancelled', 'waiting'], 60_000);
    expect(done.status).toBe('completed');
    expect(await eventsOf(full.session.id, 'approval-requested')).toEqual([]);
    expect((await eventsOf(full.session.id, 'tool-end')).map((e) => e.type === 'tool-end' && e.output)).toEqual([
      'Exit code: 0\nstdout:\nremoved\n',
    ]);

    const asking = await mention(`clean the scratch file in ${REPO}`);
    const held = await waitForStatus(f.app, asking.session.id, ['completed', 'failed', 'waiting'], 60_000);
    expect(held.status).toBe('waiting');
    expect(await eventsOf(asking.session.id, 'approval-requested')).toMatchObject([
      { command: 'rm -f /tmp/patchbay-scratch; echo removed', classes: ['delete-outside'] },
    ]);
    expect(await eventsOf(asking.session.id, 'autonomy-set')).toEqual([
      { type: 'autonomy-set', level: 'ask-risky', source: 'installation' },
    ]);
  });
});
