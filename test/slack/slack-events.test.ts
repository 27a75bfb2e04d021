import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, blockAction, envelope, message, signBody } from '../fakes/fake-slack-events.ts';
import { deliveriesWorked, waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { SIGNING_SECRET, startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

describe('Slack events over HTTP (real Bolt app, signed requests, fake Web API)', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture();
  });
  afterAll(() => f.dispose());

  it('answers url_verification with the challenge', async () => {
    const res = await f.postEvent({
      token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
  });

  it('refuses a bad signature, a stale or future timestamp and a missing one with 401, and creates nothing', async () => {
    const before = f.slack.calls.length;
    const stored = (await f.app.inbound.list()).length;
    const mention = appMention({ user: 'U0ALICE01', text: 'fix it in <https://github.com/acme/widgets>' });
    const body = JSON.stringify(envelope(mention));
    const wrong = signBody('not-the-secret', body);
    const old = signBody(SIGNING_SECRET, body, { timestamp: Math.floor(Date.now() / 1000) - 301 });
    // The server checks a moment later than this line runs, which brings a future timestamp closer:
    // keep it clear of the 300 s boundary (the exact boundary is covered in slack-config.test.ts).
    const future = signBody(SIGNING_SECRET, body, { timestamp: Math.floor(Date.now() / 1000) + 310 });
    const tampered = signBody(SIGNING_SECRET, body);
    const responses = await Promise.all([
      f.post(body, wrong.headers),
      f.post(body, old.headers),
      f.post(body, future.headers),
      f.post(body.replace('acme', 'evil'), tampered.headers),
      f.post(body, { 'content-type': 'application/json' }),
    ]);
    expect(responses.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    // A delivery is stored before its ack: a refused one left no row, so nothing can come of it later.
    expect(await f.app.inbound.list()).toHaveLength(stored);
    await deliveriesWorked(f.app);
    expect(f.slack.calls.length).toBe(before);
    expect(await f.sessionFor(CHANNEL, mention.ts)).toBeUndefined();
    expect(await f.app.store.list()).toHaveLength(0);
  });

  it('asks for the repository when a mention names none, and nothing else happens until a reply names one', async () => {
    f.setScenario(() => ({ text: 'Looked at it; nothing needed changing.' }));
    const mention = appMention({ user: 'U0ALICE01', text: 'please fix the flaky login test' });
    const res = await f.postEvent(envelope(mention));
    expect(res.status).toBe(200);
    const reply = await waitForPost(f.slack, CHANNEL, mention.ts, () => true, 'the reply');
    expect(reply.text).toBe(
      'Please paste the GitHub repository URL (private repositories work where the GitHub App is installed)',
    );
    await deliveriesWorked(f.app);
    expect(f.slack.thread(CHANNEL, mention.ts)).toHaveLength(1);
    expect(await f.sessionFor(CHANNEL, mention.ts)).toBeUndefined();
    expect(f.model.requests).toHaveLength(0);

    // Someone else's chatter in the thread is not a repository and gets no answer.
    await f.postEvent(
      envelope(message({ user: 'U0BOB0002', text: 'I think it is the auth one', threadTs: mention.ts })),
    );
    await f.postEvent(
      envelope(
        message({ user: 'U0ALICE01', text: 'it is <https://github.com/acme/auth/tree/main>', threadTs: mention.ts }),
      ),
    );
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    expect(session.prompt).toBe('please fix the flaky login test');
    expect(session.baseBranch).toBe('main');
    expect(session.requester).toEqual({
      source: 'slack',
      id: 'U0ALICE01',
      name: 'Alice Doe',
      email: 'alice@example.com',
    });
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const final = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => t.includes('Finished with no changes'),
      'the final reply',
    );
    expect(final.text).toContain('Looked at it; nothing needed changing.');
  });

  it('takes a Slack retry of the same event once', async () => {
    f.setScenario(() => ({ text: 'done' }));
    const mention = appMention({ user: 'U0ALICE01', text: 'tidy up <https://github.com/acme/widgets>' });
    const payload = envelope(mention);
    const first = await f.postEvent(payload);
    const retry = await f.postEvent(payload, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' });
    expect([first.status, retry.status]).toEqual([200, 200]);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    await waitForStatus(f.app, session.id, ['completed', 'failed']);
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Finished with no changes'), 'the final reply');
    // The same message delivered again with a new event id (as app_mention and message both arrive) is one request too.
    await f.postEvent(envelope({ ...mention }));
    await deliveriesWorked(f.app);
    const sessions = (await f.app.store.list()).filter((s) => s.prompt.includes('tidy up'));
    expect(sessions).toHaveLength(1);
    expect(f.slack.reactions.filter((r) => r.timestamp === mention.ts)).toEqual([
      { channel: CHANNEL, timestamp: mention.ts, name: 'eyes' },
    ]);
    expect(f.slack.thread(CHANNEL, mention.ts).filter((m) => m.text.includes('/sessions/'))).toHaveLength(1);
    expect((await f.app.store.events(session.id, { types: ['user-message'] })).length).toBe(1);
  });

  it('ignores messages from bots, the app itself included', async () => {
    f.setScenario(() => ({ text: 'done' }));
    const mention = appMention({ user: 'U0ALICE01', text: 'lint <https://github.com/acme/widgets>' });
    await f.postEvent(envelope(mention));
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    await waitForStatus(f.app, session.id, ['completed', 'failed']);
    await f.postEvent(envelope(message({ text: 'I am a bot', threadTs: mention.ts, botId: 'B0OTHER01' })));
    await f.postEvent(envelope(message({ user: 'U0BOT0001', text: 'my own echo', threadTs: mention.ts })));
    await f.postEvent(
      envelope(message({ user: 'U0ALICE01', text: 'edited', threadTs: mention.ts, subtype: 'message_changed' })),
    );
    await deliveriesWorked(f.app);
    expect((await f.app.store.events(session.id, { types: ['user-message'] })).length).toBe(1);
  });

  it('lists several candidate repositories with a recommendation and starts on the one clicked', async () => {
    f.setScenario(() => ({ text: 'done' }));
    const mention = appMention({
      user: 'U0ALICE01',
      text: 'bump deps in <https://github.com/acme/api> or <https://github.com/acme/web>',
    });
    await f.postEvent(envelope(mention));
    const list = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => t.includes('names 2 repositories'),
      'the candidate list',
    );
    expect(list.text).toMatch(/I recommend \*acme\/api\*: it is the first one your message names/);
    const buttons = (list.blocks as { type: string; elements?: { action_id: string; value: string }[] }[]).find(
      (b) => b.type === 'actions',
    )!.elements!;
    expect(buttons.map((b) => b.value)).toEqual(['0', '1']);
    expect(await f.sessionFor(CHANNEL, mention.ts)).toBeUndefined();

    const res = await f.postAction(
      blockAction({
        user: 'U0BOB0002',
        actionId: buttons[1]!.action_id,
        value: '1',
        messageTs: list.ts,
        threadTs: mention.ts,
      }),
    );
    expect(res.status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    expect(session.prompt).toContain('bump deps in https://github.com/acme/api or https://github.com/acme/web');
    expect(session.requester.id).toBe('U0ALICE01');
    await waitForStatus(f.app, session.id, ['completed', 'failed']);
  });

  it('starts one session for all the repositories named when "All of them" is clicked, told the others for sub-tasks', async () => {
    f.setScenario(() => ({ text: 'done' }));
    const mention = appMention({
      user: 'U0ALICE01',
      text: 'rename the user field in <https://github.com/acme/api> and <https://github.com/acme/web>',
    });
    await f.postEvent(envelope(mention));
    const list = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => t.includes('names 2 repositories'),
      'the candidate list',
    );
    expect(list.text).toContain('*All of them* starts one session in acme/api');
    const all = (
      list.blocks as { type: string; block_id?: string; elements?: { action_id: string; value: string }[] }[]
    ).find((b) => b.block_id === 'pick_all_repos')!.elements![0]!;
    expect(all.value).toBe('all');
    const res = await f.postAction(
      blockAction({
        user: 'U0ALICE01',
        actionId: all.action_id,
        value: all.value,
        messageTs: list.ts,
        threadTs: mention.ts,
      }),
    );
    expect(res.status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    // The fixture's repoUrlFor points every repository at its local remote; the session is in the recommended one.
    expect(session.prompt).toContain(
      'rename the user field in https://github.com/acme/api and https://github.com/acme/web',
    );
    expect(session.prompt).toContain(
      `This request is for all of these repositories: ${session.repo} (this session's) and `,
    );
    expect(session.prompt).toContain('use spawn_subtasks');
    await waitForStatus(f.app, session.id, ['completed', 'failed']);
  });

  it('takes a DM like a mention, and a plain reply in the thread answers the open question', async () => {
    f.setScenario((messages) =>
      messages.some((m) => m.role === 'assistant')
        ? { text: 'answered' }
        : { toolCalls: [{ name: 'ask_user', input: { question: 'Which version?' } }] },
    );
    const dm = message({
      user: 'U0BOB0002',
      text: 'upgrade node in acme/widgets',
      channel: 'D0BOBDM01',
      channelType: 'im',
    });
    await f.postEvent(envelope(dm));
    const session = await waitFor(() => f.sessionFor('D0BOBDM01', dm.ts), 'the DM session');
    await waitForStatus(f.app, session.id, ['waiting']);
    const question = await waitForPost(
      f.slack,
      'D0BOBDM01',
      dm.ts,
      (t) => t.includes('Which version?'),
      'the question',
    );
    expect(question.blocks?.some((b) => (b as { type: string }).type === 'actions')).toBe(false);
    await f.postEvent(
      envelope(
        message({ user: 'U0BOB0002', text: 'node 24', channel: 'D0BOBDM01', channelType: 'im', threadTs: dm.ts }),
      ),
    );
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const answered = (await f.app.store.events(session.id, { types: ['question-answered'] })).map((e) => e.event);
    expect(answered).toEqual([
      expect.objectContaining({ text: 'node 24', actor: expect.objectContaining({ id: 'U0BOB0002' }) }),
    ]);
  });

  it('a choice longer than a button value holds is answered whole when its button is clicked', async () => {
    // A choice of 2,500 characters: Slack takes at most 2,000 in a button value and 75 in its label.
    const long = `Rewrite the config loader: ${'keep every existing key, '.repeat(100)}end.`;
    expect(long.length).toBeGreaterThan(2_000);
    f.setScenario((messages) =>
      messages.some((m) => m.role === 'assistant')
        ? { text: 'done' }
        : {
            toolCalls: [
              { name: 'ask_user', input: { question: 'Which plan?', choices: ['Small fix', long], recommended: long } },
            ],
          },
    );
    const mention = appMention({ user: 'U0ALICE01', text: 'plan something in github.com/acme/widgets' });
    await f.postEvent(envelope(mention));
    const session = await waitFor(() => f.sessionFor('C123ABC456', mention.ts), 'the session');
    await waitForStatus(f.app, session.id, ['waiting']);
    const question = await waitForPost(
      f.slack,
      'C123ABC456',
      mention.ts,
      (t) => t.includes('Which plan?'),
      'the question',
    );
    const buttons = (
      question.blocks as { type: string; elements?: { action_id: string; value: string; text: { text: string } }[] }[]
    ).find((b) => b.type === 'actions')!.elements!;
    expect(buttons[1]!.text.text.length).toBeLessThanOrEqual(75);
    const click = await f.postAction(
      blockAction({
        user: 'U0ALICE01',
        actionId: buttons[1]!.action_id,
        value: buttons[1]!.value,
        messageTs: question.ts,
        threadTs: mention.ts,
      }),
    );
    expect(click.status).toBe(200);
    expect((await waitForStatus(f.app, session.id, ['completed', 'failed'])).status).toBe('completed');
    const answered = (await f.app.store.events(session.id, { types: ['question-answered'] })).map((e) => e.event);
    expect(answered).toEqual([
      expect.objectContaining({ text: long, actor: expect.objectContaining({ id: 'U0ALICE01' }) }),
    ]);
  });
});
