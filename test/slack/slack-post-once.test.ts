import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, envelope } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

describe('Slack posts exactly once', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture();
  });
  afterAll(() => f.dispose());

  it('a post whose connection drops after Slack accepted it appears once in the thread', {
    timeout: 120_000,
  }, async () => {
    f.setScenario(() => ({ text: 'Nothing needed changing.' }));
    f.slack.dropAfterAccept('chat.postMessage');
    const mention = appMention({
      user: 'U0ALICE01',
      text: 'check the readme of <https://github.com/acme/widgets|github.com/acme/widgets>',
    });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    await waitForStatus(f.app, session.id, ['completed', 'failed'], 90_000);
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Finished with no changes'), 'the final reply');

    const thread = f.slack.thread(CHANNEL, mention.ts);
    // Keyed posts (the status message) once each; the agent's streamed words carry no key.
    const keys = thread.flatMap((m) => (m.metadata ? [m.metadata.event_payload.key] : []));
    expect(keys.filter((k) => k === 'status')).toHaveLength(1);
    expect(new Set(keys).size).toBe(keys.length);
    expect(thread.filter((m) => m.text?.includes('Finished with no changes'))).toHaveLength(1);
    // The lost answer was resolved by looking at the thread, not by posting again.
    expect(f.slack.calls.filter((c) => c.method === 'conversations.replies').length).toBeGreaterThanOrEqual(1);
    expect(f.slack.refused).toEqual([]);
  });
});
