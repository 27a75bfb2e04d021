import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { appMention, envelope, message } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { pidsWithMarker } from '../sandbox/sandbox-test-helpers.ts';
import { assistantTurns, startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

/** A page that loads a picture from a host outside the allowlist (refused by name: nothing leaves this machine). */
const PAGE =
  '<!doctype html><title>Shop</title><h1>Shop</h1><img alt="logo" src="https://cdn.blocked.test/logo.png">\n';

/** The turns: the server, then `calls` one a turn, then a last word. */
const turns =
  (port: number, calls: ScriptedTurn[]) =>
  (messages: Parameters<Parameters<SlackFixture['setScenario']>[0]>[0]): ScriptedTurn => {
    const n = assistantTurns(messages);
    if (n === 0) {
      const command = `exec python3 -m http.server ${port} --bind 127.0.0.1`;
      return { toolCalls: [{ name: 'process_start', input: { command, port } }] };
    }
    return calls[n - 1] ?? { text: 'Looked at the page.' };
  };

/** The browser in a Slack session: the egress proxy judges its requests, and Stop ends it. */
describe('the browser tools from a Slack thread', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture();
    await f.remote.pushCommit('index.html', PAGE, 'A shop page with a logo from a CDN');
  });
  afterAll(() => f.dispose());

  it('shows a host the page asked for outside the allowlist as egress-blocked in the thread', async () => {
    const port = 8174;
    f.setScenario(
      turns(port, [{ toolCalls: [{ name: 'browser_open', input: { url: `http://127.0.0.1:${port}/` } }] }]),
    );
    const mention = appMention({ user: 'U0ALICE01', text: 'look at the shop page of github.com/acme/widgets' });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(done.status).toBe('completed');

    const opened = (await f.app.store.events(session.id, { types: ['tool-end'] }))
      .map((e) => e.event)
      .find((e) => e.type === 'tool-end' && e.name === 'browser_open');
    expect(opened?.type === 'tool-end' && opened.output).toContain('heading "Shop"');
    expect(opened?.type === 'tool-end' && opened.output).toContain('request failed');
    const blocked = await f.app.store.events(session.id, { types: ['egress-blocked'] });
    expect(blocked.map((e) => e.event)).toEqual([
      { type: 'egress-blocked', host: 'cdn.blocked.test', port: 443, reason: 'not-allowed' },
    ]);
    const status = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => t.includes(`/sessions/${session.id}`) && t.includes('cdn.blocked.test'),
      'the status message with the refused host',
    );
    expect(status.text).toContain('Network access refused: cdn.blocked.test:443 (not in SANDBOX_EGRESS_ALLOW)');
  });

  it('"stop" during browser_wait_for ends the run within 10 s and leaves no browser or server', async () => {
    const port = 8175;
    f.setScenario(
      turns(port, [
        { toolCalls: [{ name: 'browser_open', input: { url: `http://127.0.0.1:${port}/` } }] },
        { toolCalls: [{ name: 'browser_wait_for', input: { text: 'a text the page never shows', seconds: 120 } }] },
      ]),
    );
    const mention = appMention({ user: 'U0ALICE01', text: 'wait for the shop of github.com/acme/widgets' });
    await f.postEvent(envelope(mention));
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    const left = async () => [
      ...(await pidsWithMarker(`http.server ${port}`)),
      ...(await pidsWithMarker(`patchbay-browser-${session.id}`)),
    ];
    await waitFor(
      async () =>
        (await f.app.store.events(session.id, { types: ['tool-start'] })).some(
          (e) => e.event.type === 'tool-start' && e.event.name === 'browser_wait_for',
        ),
      'the wait',
      120_000,
    );
    // The server and the browser run while the agent waits.
    expect((await pidsWithMarker(`http.server ${port}`)).length).toBeGreaterThan(0);
    expect((await pidsWithMarker(`patchbay-browser-${session.id}`)).length).toBeGreaterThan(0);
    const stopped = Date.now();
    await f.postEvent(envelope(message({ user: 'U0BOB0002', text: 'stop', threadTs: mention.ts })));
    const done = await waitForStatus(f.app, session.id, ['cancelled', 'completed', 'failed'], 10_000);
    expect(done.status).toBe('cancelled');
    await waitFor(async () => ((await left()).length === 0 ? true : undefined), 'no server or browser left', 10_000);
    expect(Date.now() - stopped).toBeLessThan(10_000);
  });
});
