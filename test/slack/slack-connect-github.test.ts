import { afterEach, describe, expect, it } from 'vitest';
import { appMention, envelope, message } from '../fakes/fake-slack-events.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startSlackFixture, type SlackFixture } from './slack-fixture.ts';

describe('"connect github" in Slack', () => {
  let f: SlackFixture | undefined;
  afterEach(async () => {
    await f?.dispose();
    f = undefined;
  });

  it('sends the person, and only them, a sign-in link bound to their Slack identity; no session starts', async () => {
    f = await startSlackFixture({
      signInLink: (actor) => `https://patchbay.example/github/oauth/start?link=${actor.source}.${actor.id}`,
    });
    const dm = message({ user: 'U0BOB0002', text: 'connect github', channel: 'D0BOBDM01', channelType: 'im' });
    expect((await f.postEvent(envelope(dm))).status).toBe(200);
    const ephemeral = await waitFor(async () => f!.slack.ephemerals[0], 'the sign-in link');
    expect(ephemeral).toMatchObject({ channel: 'D0BOBDM01', user: 'U0BOB0002' });
    expect(ephemeral.text).toContain('https://patchbay.example/github/oauth/start?link=slack.U0BOB0002');
    expect(f.slack.messages).toEqual([]);
    expect(f.slack.reactions).toEqual([]);
    expect(await f.app.store.list()).toEqual([]);
  });

  it('says that sign-in is not set up when it is not', async () => {
    f = await startSlackFixture();
    const mention = appMention({ user: 'U0ALICE01', text: '<@U0BOT0001> connect my GitHub account' });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const ephemeral = await waitFor(async () => f!.slack.ephemerals[0], 'the reply');
    expect(ephemeral.user).toBe('U0ALICE01');
    expect(ephemeral.text).toMatch(/GitHub sign-in is not set up/);
    expect(await f.app.store.list()).toEqual([]);
  });
});
