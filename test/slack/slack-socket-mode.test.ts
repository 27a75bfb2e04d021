import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, envelope } from '../fakes/fake-slack-events.ts';
import { startFakeSlackSocket, type FakeSlackSocket } from '../fakes/fake-slack-socket.ts';
import { deliveriesWorked, waitFor } from '../helpers/wait-for.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

describe('Slack over Socket Mode (real SocketModeReceiver, loopback WebSocket)', () => {
  let socket: FakeSlackSocket;
  let f: SlackFixture;
  beforeAll(async () => {
    socket = await startFakeSlackSocket();
    f = await startSlackFixture({ socket });
    await socket.connected();
  });
  afterAll(async () => {
    await f.dispose();
    await socket.close();
  });

  it('opens the connection with the app token at SLACK_API_URL, acks envelopes, and serves no HTTP route', async () => {
    const open = f.slack.calls.find((c) => c.method === 'apps.connections.open');
    expect(open?.token).toBe('xapp-1-test-0000-app');
    const mention = appMention({ user: 'U0ALICE01', text: 'fix the typo in the README' });
    const ack = await socket.sendEvent(envelope(mention));
    expect(ack.envelope_id).toEqual(expect.any(String));
    const reply = await waitForPost(f.slack, CHANNEL, mention.ts, () => true, 'the reply');
    expect(reply.text).toBe(
      'Please paste the GitHub repository URL (private repositories work where the GitHub App is installed)',
    );
    const res = await fetch(`${f.app.url}/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(404);
  });

  it('takes a redelivered envelope (retry_attempt 1) once', async () => {
    f.setScenario(() => ({ text: 'done' }));
    const mention = appMention({ user: 'U0ALICE01', text: 'tidy <https://github.com/acme/widgets>' });
    const payload = envelope(mention);
    await socket.sendEvent(payload);
    await socket.sendEvent(payload, { attempt: 1, reason: 'timeout' });
    await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    await deliveriesWorked(f.app);
    expect((await f.app.store.list()).filter((s) => s.prompt.startsWith('tidy'))).toHaveLength(1);
    expect(f.slack.reactions.filter((r) => r.timestamp === mention.ts)).toHaveLength(1);
  });
});
