import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, blockAction, envelope } from '../fakes/fake-slack-events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import type { ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';
/** Appends a line to published.txt each time it really runs; `npm publish` makes it a held command. */
const PUBLISH = 'echo once >> published.txt; npm publish >/dev/null 2>&1; true';
const LOOK = 'cat published.txt 2>/dev/null || echo absent';

/** Publishes; after a denial looks whether anything ran and tries again; after the approved run looks again. */
function publishScenario(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.at(-1);
  const content = last?.role === 'tool' ? last.content : '';
  if (last?.role !== 'tool') return { toolCalls: [{ name: 'run_shell', input: { command: PUBLISH } }] };
  if (content.includes('once')) return { text: 'Published once.' };
  if (content.includes('absent')) return { toolCalls: [{ name: 'run_shell', input: { command: PUBLISH } }] };
  return { toolCalls: [{ name: 'run_shell', input: { command: LOOK } }] };
}

type Button = { action_id: string; value: string; text: { text: string } };

describe('approvals decided in the Slack thread (fake Slack, real sandbox, scripted model, APPROVALS=on)', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    // Publishing is refused unless an operator's rule allows it (issue 36): this one asks.
    f = await startSlackFixture({ env: { APPROVALS: 'on', APPROVAL_RULES: 'publish=ask' } });
  });
  afterAll(() => f.dispose());

  it('npm publish is held with buttons; someone else cannot decide; Deny hands the model the reason and nothing ran; Approve runs it once', {
    timeout: 120_000,
  }, async () => {
    f.setScenario(publishScenario);
    const mention = appMention({ user: 'U0ALICE01', text: 'release <https://github.com/acme/widgets|acme/widgets>' });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');

    const seen = new Set<string>();
    const request = async (n: number) => {
      // A decided request's message is edited (its buttons go), so the next one is the open one not seen yet.
      const post = await waitFor(
        async () =>
          f.slack.thread(CHANNEL, mention.ts).find((m) => m.text.includes('Approval needed') && !seen.has(m.ts)),
        `approval request ${n}`,
      );
      seen.add(post.ts);
      expect(post.text).toContain(PUBLISH);
      expect(post.text).toMatch(/Why it was held\* \(publish\)/);
      expect(post.text).toContain('Approving runs exactly this command once');
      const buttons = (post.blocks as { type: string; elements?: Button[] }[]).find((b) => b.type === 'actions')!
        .elements!;
      expect(buttons.map((b) => b.text.text)).toEqual(['Approve once', 'Deny']);
      await waitForStatus(f.app, session.id, ['waiting']);
      return { post, approve: buttons[0]!, deny: buttons[1]! };
    };
    const click = (user: string, button: Button, messageTs: string) =>
      f.postAction(
        blockAction({ user, actionId: button.action_id, value: button.value, messageTs, threadTs: mention.ts }),
      );

    const first = await request(1);
    // Bob did not ask for the session: he is told, privately, and nothing is decided.
    expect((await click('U0BOB0002', first.approve, first.post.ts)).status).toBe(200);
    await waitFor(
      async () => f.slack.ephemerals.find((e) => e.user === 'U0BOB0002' && e.text.includes('Only Alice Doe')),
      "Bob's refusal",
    );
    expect(await f.app.store.events(session.id, { types: ['approval-decided'] })).toEqual([]);
    expect((await f.app.store.get(session.id))?.status).toBe('waiting');

    expect((await click('U0ALICE01', first.deny, first.post.ts)).status).toBe(200);
    const second = await request(2);
    expect((await click('U0ALICE01', second.approve, second.post.ts)).status).toBe(200);

    const done = await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');
    const ends = (await f.app.store.events(session.id, { types: ['tool-end'] })).map((e) =>
      e.event.type === 'tool-end' ? e.event : undefined,
    );
    expect(ends.map((e) => e?.output)).toEqual([
      'Not approved: Alice Doe denied it: denied in Slack without a reason. The command did not run.',
      'Exit code: 0\nstdout:\nabsent\n',
      'Exit code: 0',
      'Exit code: 0\nstdout:\nonce\n',
    ]);
    const decided = (await f.app.store.events(session.id, { types: ['approval-decided'] })).map((e) => e.event);
    expect(decided).toMatchObject([
      { decision: 'denied', surface: 'slack', actor: { id: 'U0ALICE01' }, reason: 'denied in Slack without a reason' },
      { decision: 'approved', surface: 'slack', actor: { id: 'U0ALICE01' } },
    ]);
    // Each request's message lost its buttons for the decision.
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Alice Doe denied running'), 'the denial');
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Alice Doe approved running'), 'the approval');
  });
});
