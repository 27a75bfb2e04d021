import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, blockAction, envelope, message } from '../fakes/fake-slack-events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import type { ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';
/** Appends a line to published.txt each time it really runs; `npm publish` makes it a held command. */
const PUBLISH = 'echo once >> published.txt; npm publish >/dev/null 2>&1; true';
const LOOK = 'cat published.txt 2>/dev/null || echo absent';
const TOKEN = 'test-token-0123456789abcdef';

const firstText = (messages: readonly ModelMessage[]) => {
  const first = messages[0];
  return first?.role === 'user' ? first.content : '';
};

/**
 * The parent fans out one sub-task and ends with its result; the sub-task publishes, then looks
 * at what ran and ends with what it saw (or with the error a denial gave its call).
 */
function scenario(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.at(-1);
  const content = last?.role === 'tool' ? last.content : '';
  if (!firstText(messages).includes('CHILD-PUB')) {
    if (last?.role !== 'tool')
      return {
        toolCalls: [
          { name: 'spawn_subtasks', input: { tasks: [{ title: 'Release', prompt: 'CHILD-PUB: publish it' }] } },
        ],
      };
    return { text: 'Parent done.' };
  }
  if (last?.role !== 'tool') return { toolCalls: [{ name: 'run_shell', input: { command: PUBLISH } }] };
  if (content.startsWith('Not approved')) return { text: `CHILD GOT: ${content}` };
  if (content.startsWith('Exit code: 0\nstdout:')) return { text: `CHILD SAW: ${content}` };
  // Slowly: the parent's thread shows the decision while the sub-task still works.
  return { toolCalls: [{ name: 'run_shell', input: { command: LOOK } }], delayMs: 4000 };
}

type Button = { action_id: string; value: string; text: { text: string } };

describe("a sub-task's approval request, decided in its parent's Slack thread (fake Slack, real sandbox, APPROVALS=on)", () => {
  let f: SlackFixture;
  beforeAll(async () => {
    // Publishing is refused unless an operator's rule lets it ask: this one does.
    f = await startSlackFixture({ env: { APPROVALS: 'on', APPROVAL_RULES: 'publish=ask', PATCHBAY_API_TOKEN: TOKEN } });
    f.setScenario(scenario);
  });
  afterAll(() => f.dispose());

  /** Mentions Patchbay, waits for the sub-task's request in the thread, and returns it with its buttons. */
  async function fanOut(text: string) {
    const mention = appMention({ user: 'U0ALICE01', text: `${text} <https://github.com/acme/widgets|acme/widgets>` });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const parent = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the parent session');
    const post = await waitFor(
      async () => f.slack.thread(CHANNEL, mention.ts).find((m) => m.text.includes('Approval needed')),
      "the sub-task's approval request in the parent's thread",
    );
    expect(post.text).toContain(PUBLISH);
    expect(post.text).toContain('Sub-task 1 (Release) holds this command.');
    const buttons = (post.blocks as { type: string; elements?: Button[] }[]).find((b) => b.type === 'actions')!
      .elements!;
    expect(buttons.map((b) => b.text.text)).toEqual(['Approve once', 'Deny']);
    const [child] = await f.app.store.children(parent!.id);
    expect(buttons[0]!.value).toMatch(new RegExp(`^${child!.sessionId}:`));
    await waitForStatus(f.app, child!.sessionId, ['waiting']);
    return { mention, parentId: parent!.id, childId: child!.sessionId, post, approve: buttons[0]!, deny: buttons[1]! };
  }

  const toolEnds = async (sessionId: string) =>
    (await f.app.store.events(sessionId, { types: ['tool-end'] })).flatMap((e) =>
      e.event.type === 'tool-end' && e.event.name === 'run_shell' ? [e.event.output] : [],
    );

  it('Approve on the parent thread runs it once in the sub-task; someone else is told they cannot', {
    timeout: 150_000,
  }, async () => {
    const { mention, parentId, childId, post, approve } = await fanOut('release');
    const click = (user: string) =>
      f.postAction(
        blockAction({
          user,
          actionId: approve.action_id,
          value: approve.value,
          messageTs: post.ts,
          threadTs: mention.ts,
        }),
      );
    expect((await click('U0BOB0002')).status).toBe(200);
    await waitFor(
      async () => f.slack.ephemerals.find((e) => e.user === 'U0BOB0002' && e.text.includes('Only Alice Doe')),
      "Bob's refusal",
    );
    expect(await f.app.store.events(childId, { types: ['approval-decided'] })).toEqual([]);

    expect((await click('U0ALICE01')).status).toBe(200);
    // The request's message loses its buttons as soon as it is decided, not when the sub-task ends.
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Alice Doe approved running'), 'the approval');
    expect((await f.app.store.get(childId))?.status).not.toBe('completed');
    const done = await waitForStatus(f.app, parentId, ['completed', 'failed', 'cancelled'], 90_000);
    expect(done.status).toBe('completed');
    expect((await f.app.store.get(childId))?.status).toBe('completed');
    expect(await toolEnds(childId)).toEqual(['Exit code: 0', 'Exit code: 0\nstdout:\nonce\n']);
    // The decision is on both logs: the child's under its own id, the parent's under the relayed one.
    const onChild = (await f.app.store.events(childId, { types: ['approval-decided'] })).map((e) => e.event);
    const onParent = (await f.app.store.events(parentId, { types: ['approval-decided'] })).map((e) => e.event);
    expect(onChild).toMatchObject([{ decision: 'approved', surface: 'slack', actor: { id: 'U0ALICE01' } }]);
    expect(onParent).toMatchObject([{ requestId: approve.value, decision: 'approved', actor: { id: 'U0ALICE01' } }]);
  });

  it("`deny <reason>` in the parent's thread hands the sub-task's model the reason, and nothing ran", {
    timeout: 150_000,
  }, async () => {
    const { mention, parentId, childId } = await fanOut('release again');
    const reply = message({ user: 'U0ALICE01', text: 'deny not before the release notes', threadTs: mention.ts });
    expect((await f.postEvent(envelope(reply))).status).toBe(200);
    const done = await waitForStatus(f.app, parentId, ['completed', 'failed', 'cancelled'], 90_000);
    expect(done.status).toBe('completed');
    const denial = 'Not approved: Alice Doe denied it: not before the release notes. The command did not run.';
    expect(await toolEnds(childId)).toEqual([denial]);
    const transcript = await f.app.store.transcript(childId);
    expect(JSON.stringify(transcript)).toContain(`CHILD GOT: ${denial}`);
    const onParent = (await f.app.store.events(parentId, { types: ['approval-decided'] })).map((e) => e.event);
    expect(onParent).toMatchObject([{ decision: 'denied', reason: 'not before the release notes' }]);
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Alice Doe denied running'), 'the denial');
  });

  it("the parent's page decides it too (its approval route with the relayed id), and the Slack message closes", {
    timeout: 150_000,
  }, async () => {
    const { mention, parentId, childId, approve } = await fanOut('release from the page');
    const url = `${f.app.url}/api/sessions/${parentId}/approvals/${encodeURIComponent(approve.value)}`;
    const decide = (payload: object) =>
      fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
    const answered = await decide({ decision: 'denied', reason: 'wrong registry', author: { name: 'Operator' } });
    expect(answered.status).toBe(202);
    expect(await answered.json()).toEqual({ id: parentId, status: 'waiting' });
    // Decided once: the same request again is no longer open.
    expect((await decide({ decision: 'approved' })).status).toBe(409);
    const done = await waitForStatus(f.app, parentId, ['completed', 'failed', 'cancelled'], 90_000);
    expect(done.status).toBe('completed');
    expect(await toolEnds(childId)).toEqual([
      'Not approved: Operator denied it: wrong registry. The command did not run.',
    ]);
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Operator denied running'), 'the denial');
  });
});
