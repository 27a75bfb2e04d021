import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, envelope } from '../fakes/fake-slack-events.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

describe('Slack rate limits', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture({ retryConfig: { retries: 2, minTimeout: 50, maxTimeout: 200 } });
  });
  afterAll(() => f.dispose());

  it('waits out a 429 with Retry-After and then posts the reply', async () => {
    f.slack.rateLimit('chat.postMessage', 1);
    const mention = appMention({ user: 'U0ALICE01', text: 'fix the build' });
    await f.postEvent(envelope(mention));
    const reply = await waitForPost(f.slack, CHANNEL, mention.ts, () => true, 'the reply');
    expect(reply.text).toBe(
      'Please paste the GitHub repository URL (private repositories work where the GitHub App is installed)',
    );
    const posts = f.slack.calls.filter((c) => c.method === 'chat.postMessage');
    expect(posts).toHaveLength(2);
    expect(posts[1]!.at - posts[0]!.at).toBeGreaterThanOrEqual(950);
    expect(f.slack.thread(CHANNEL, mention.ts)).toHaveLength(1);
  });
});
