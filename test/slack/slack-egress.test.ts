import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, envelope } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { assistantTurns, startSlackFixture, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

describe('a refused network connection in a Slack thread', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture();
  });
  afterAll(() => f.dispose());

  it("shows the refused host in the thread's status message, once, with how to allow it", async () => {
    // The host is refused by the allowlist before any DNS: no packet leaves this machine.
    f.setScenario((messages) =>
      assistantTurns(messages) === 0
        ? {
            toolCalls: [
              {
                name: 'run_shell',
                input: {
                  command:
                    'curl -sS -o /dev/null -w "%{http_code}" https://evil.example/x; curl -sS -o /dev/null https://evil.example/y; echo',
                },
              },
            ],
          }
        : { text: 'The registry was not reachable.' },
    );
    const mention = appMention({
      user: 'U0ALICE01',
      text: 'install the deps of <https://github.com/acme/widgets|github.com/acme/widgets>',
    });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');

    const shell = (await f.app.store.events(session.id, { types: ['tool-end'] }))
      .map((e) => e.event)
      .find((e) => e.type === 'tool-end' && e.name === 'run_shell');
    expect(shell?.type === 'tool-end' && shell.output).toContain('403');
    const blocked = await f.app.store.events(session.id, { types: ['egress-blocked'] });
    expect(blocked.map((e) => e.event)).toEqual([
      { type: 'egress-blocked', host: 'evil.example', port: 443, reason: 'not-allowed' },
    ]);

    const status = await waitFor(
      async () =>
        f.slack
          .thread(CHANNEL, mention.ts)
          .find((m) => m.text.includes(`/sessions/${session.id}`) && m.text.includes('evil.example')),
      'the status message with the refused host',
    );
    expect(status.text).toContain('Network access refused: evil.example:443 (not in SANDBOX_EGRESS_ALLOW)');
    expect(status.text.match(/evil\.example/g)).toHaveLength(1);
    expect(JSON.stringify(status.blocks)).toContain('SANDBOX_EGRESS_ALLOW');
  });
});
