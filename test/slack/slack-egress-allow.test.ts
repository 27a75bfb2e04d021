import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorize, type EgressBlock } from '../../sandbox/egress-authorize.ts';
import { appMention, blockAction, envelope, message } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { assistantTurns, startSlackFixture, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';
const HOST = 'registry.blocked.example';
type Button = { action_id: string; value: string; text: { text: string } };

/**
 * The proxy's decision for a session, as its sandbox's proxy makes it: the composition's policy and
 * allowances, names pinned to a public documentation address so nothing is resolved or connected.
 */
async function decide(f: SlackFixture, sessionId: string, host: string, pinned = '93.184.215.14') {
  const blocks: EgressBlock[] = [];
  const gate = {
    resolve: async () => [{ address: pinned, family: 4 }],
    reported: new Set<string>(),
    log: pino({ level: 'silent' }),
    onBlocked: (block: EgressBlock) => blocks.push(block),
    allowed: () => f.app.egress.allowed(sessionId),
  };
  const decision = await authorize(gate, host, 80, f.app.egress.policy);
  return { decision, blocks };
}

describe('a refused host allowed from the Slack thread (fake Slack, real sandbox, the real composition)', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture();
  });
  afterAll(() => f.dispose());

  it('"Allow for this repository" lets the next session on the repository through; it is on the Repo tab; an address offered the same way is refused', {
    timeout: 120_000,
  }, async () => {
    // Refused by the allowlist before any DNS: no packet leaves this machine.
    f.setScenario((messages) =>
      assistantTurns(messages) === 0
        ? { toolCalls: [{ name: 'run_shell', input: { command: `curl -sS http://${HOST}/x 2>&1; echo` } }] }
        : { text: 'The registry was refused.' },
    );
    const mention = appMention({ user: 'U0ALICE01', text: 'install <https://github.com/acme/widgets|acme/widgets>' });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const first = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the first session');
    expect((await waitForStatus(f.app, first.id, ['completed', 'failed'], 60_000)).status).toBe('completed');
    const shell = (await f.app.store.events(first.id, { types: ['tool-end'] })).map((e) => e.event).at(-1);
    expect(shell?.type === 'tool-end' && shell.output).toContain(
      `refused ${HOST}:80: not in SANDBOX_EGRESS_ALLOW. People in the session's thread can allow this host`,
    );

    // The refused host has its own message with the two buttons.
    const post = await waitFor(
      async () => f.slack.thread(CHANNEL, mention.ts).find((m) => m.text.includes(`The sandbox was refused *${HOST}`)),
      'the refused host with its buttons',
    );
    const buttons = (post.blocks as { type: string; elements?: Button[] }[]).find((b) => b.type === 'actions')!
      .elements!;
    expect(buttons.map((b) => b.text.text)).toEqual(['Allow for this session', 'Allow for this repository']);
    const click = (user: string, button: Button) =>
      f.postAction(
        blockAction({
          user,
          actionId: button.action_id,
          value: button.value,
          messageTs: post.ts,
          threadTs: mention.ts,
        }),
      );

    // Bob did not ask for the session: he is told, privately, and nothing is allowed.
    expect((await click('U0BOB0002', buttons[1]!)).status).toBe(200);
    await waitFor(
      async () => f.slack.ephemerals.find((e) => e.user === 'U0BOB0002' && e.text.includes('Only Alice Doe')),
      "Bob's refusal",
    );
    expect((await click('U0ALICE01', buttons[1]!)).status).toBe(200);
    const allowed = await waitFor(
      async () => (await f.app.store.events(first.id, { types: ['egress-allowed'] })).map((e) => e.event)[0],
      'the allowance',
    );
    expect(allowed).toMatchObject({
      host: HOST,
      port: 80,
      scope: 'repository',
      surface: 'slack',
      actor: { id: 'U0ALICE01', name: 'Alice Doe' },
    });
    await waitFor(
      async () =>
        f.slack.thread(CHANNEL, mention.ts).find((m) => m.ts === post.ts && m.text.includes('Alice Doe allowed')),
      'the message edited: the buttons gave way to who allowed it',
    );

    // A private address offered the same way (a forged click, and a reply) is refused, and says why.
    const forged = { ...buttons[1]!, value: JSON.stringify({ h: '169.254.169.254', p: 80 }) };
    expect((await click('U0ALICE01', forged)).status).toBe(200);
    const reply = message({ user: 'U0ALICE01', text: 'allow 10.1.2.3:8080 for this repository', threadTs: mention.ts });
    expect((await f.postEvent(envelope(reply))).status).toBe(200);
    await waitFor(
      async () => f.slack.ephemerals.find((e) => e.text.includes('169.254.169.254 is a link-local address')),
      'the link-local refusal',
    );
    const privateRefusal = await waitFor(
      async () => f.slack.ephemerals.find((e) => e.text.includes('10.1.2.3 is a private address')),
      'the private-address refusal',
    );
    expect(privateRefusal.text).toContain('only host names can be allowed from a thread');
    expect(await f.app.store.events(first.id, { types: ['egress-allowed'] })).toHaveLength(1);

    // Listed with the repository's knowledge (the page's Repo tab reads this).
    const repo = encodeURIComponent((await f.app.store.get(first.id))!.repo);
    const knowledge = (await (await fetch(`${f.app.url}/api/repos/${repo}/knowledge`)).json()) as {
      document: { egressAllow?: unknown[] };
    };
    expect(knowledge.document.egressAllow).toMatchObject([
      { host: HOST, port: 80, by: 'Alice Doe', surface: 'slack', sessionId: first.id },
    ]);

    // The next session on the repository: its proxy lets the host through, and no new refusal is recorded.
    f.setScenario(() => ({ text: 'Nothing to install.' }));
    const next = appMention({ user: 'U0ALICE01', text: 'check <https://github.com/acme/widgets|acme/widgets>' });
    expect((await f.postEvent(envelope(next))).status).toBe(200);
    const second = await waitFor(() => f.sessionFor(CHANNEL, next.ts), 'the second session');
    expect(second.id).not.toBe(first.id);
    const through = await decide(f, second.id, HOST);
    expect(through.decision).toMatchObject({ ok: true, host: HOST, port: 80 });
    expect(through.blocks).toEqual([]);
    // Still only that name: another host is refused, and an allowed name resolving to a private address too.
    expect((await decide(f, second.id, 'other.blocked.example')).decision).toMatchObject({ ok: false, status: 403 });
    const rebound = await decide(f, second.id, HOST, '10.0.0.7');
    expect(rebound.decision).toMatchObject({ ok: false, status: 403 });
    expect(rebound.blocks).toEqual([{ host: HOST, port: 80, reason: 'private' }]);
    await waitForStatus(f.app, second.id, ['completed'], 60_000);
    expect(await f.app.store.events(second.id, { types: ['egress-blocked'] })).toEqual([]);

    // Revoked from the Repo tab: new connections are refused again, and the first session records who revoked it.
    const revoke = await fetch(`${f.app.url}/api/repos/${repo}/egress-allow/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ host: HOST, port: 80, author: { name: 'Olga Operator' } }),
    });
    expect(revoke.status).toBe(200);
    expect((await decide(f, second.id, HOST)).decision).toMatchObject({ ok: false, status: 403 });
    const revoked = (await f.app.store.events(first.id, { types: ['egress-revoked'] })).map((e) => e.event);
    expect(revoked).toMatchObject([{ host: HOST, port: 80, scope: 'repository', actor: { name: 'Olga Operator' } }]);
  });
});
