import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../git/git-fixture.ts';
import { appMention, blockAction, envelope, message } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { assistantTurns, startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

describe('a Slack thread end to end (API, scripted model, real sandbox and git)', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture();
  });
  afterAll(() => f.dispose());

  it('mention → status → question answered in the thread → steered by a second person → pushed branch in the same thread', {
    timeout: 120_000,
  }, async () => {
    f.setScenario((messages) => {
      const turn = assistantTurns(messages);
      if (turn === 0)
        return {
          toolCalls: [
            {
              name: 'ask_user',
              input: {
                question: 'Which file should hold the notes?',
                choices: ['NOTES.md', 'CHANGES.md'],
                recommended: 'NOTES.md',
              },
            },
          ],
        };
      if (turn === 1) return { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 2' } }] };
      if (turn === 2) {
        const steered = messages.some(
          (m) => m.role === 'user' && m.content.includes('Bob Roe') && m.content.includes('mention staging'),
        );
        const answer = messages.find((m) => m.role === 'tool' && m.name === 'ask_user');
        const file = answer?.role === 'tool' && answer.content.includes('CHANGES.md') ? 'CHANGES.md' : 'NOTES.md';
        return {
          toolCalls: [{ name: 'write_file', input: { path: file, content: steered ? 'notes\nstaging\n' : 'notes\n' } }],
        };
      }
      return { text: 'Added the notes file, with staging as Bob asked.' };
    });

    const mention = appMention({
      user: 'U0ALICE01',
      text: 'add a notes file to <https://github.com/acme/widgets|github.com/acme/widgets>',
    });
    const ack = await f.postEvent(envelope(mention));
    expect(ack.status).toBe(200);

    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    expect(session.requester).toEqual({
      source: 'slack',
      id: 'U0ALICE01',
      name: 'Alice Doe',
      email: 'alice@example.com',
    });
    const status = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => t.includes(`/sessions/${session.id}`),
      'the status message',
    );
    expect(f.slack.reactions).toContainEqual({ channel: CHANNEL, timestamp: mention.ts, name: 'eyes' });

    // The question is its own message, with the choices as buttons; Alice clicks one.
    const question = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => t.includes('Which file should hold the notes?'),
      'the question',
    );
    const buttons = (
      question.blocks as { type: string; elements?: { action_id: string; value: string; text: { text: string } }[] }[]
    ).find((b) => b.type === 'actions')!.elements!;
    expect(buttons.map((b) => b.text.text)).toEqual(['NOTES.md (recommended)', 'CHANGES.md']);
    await waitForStatus(f.app, session.id, ['waiting']);
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

    // While the shell command runs, Bob steers the run from the thread.
    await waitFor(
      async () =>
        (await f.app.store.events(session.id, { types: ['tool-start'] })).some(
          (e) => e.event.type === 'tool-start' && e.event.name === 'run_shell',
        ),
      'the shell call',
    );
    await f.postEvent(
      envelope(message({ user: 'U0BOB0002', text: 'please also mention staging', threadTs: mention.ts })),
    );

    const done = await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    expect(done.status).toBe('completed');
    const final = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => /^:white_check_mark: (Pushed branch|Pull request)/.test(t),
      'the final reply',
    );
    const pr = (await f.app.store.events(session.id, { types: ['pr-opened'] }))[0];
    if (pr && pr.event.type === 'pr-opened') expect(final.text).toContain(pr.event.url);
    else expect(final.text).toContain(`Pushed branch \`${done.branch}\` (${done.result!.commit!.slice(0, 12)})`);
    expect(final.text).toContain('Added the notes file, with staging as Bob asked.');

    // What the run did: the chosen file, steered content, the requester as author and Bob as co-author.
    const tip = await f.remote.remoteBranch(done.branch!);
    expect(tip).toBe(done.result?.commit);
    expect(await git(f.remote.remote, 'show', `${tip}:CHANGES.md`)).toBe('notes\nstaging');
    expect(await git(f.remote.remote, 'log', '-1', '--format=%an <%ae>', tip)).toBe('Alice Doe <alice@example.com>');
    expect(await git(f.remote.remote, 'log', '-1', '--format=%b', tip)).toContain(
      'Co-authored-by: Bob Roe <bob@example.com>',
    );
    const said = (await f.app.store.events(session.id, { types: ['user-message', 'question-answered'] })).map(
      (e) => e.event,
    );
    expect(said).toContainEqual(
      expect.objectContaining({
        type: 'question-answered',
        text: 'CHANGES.md',
        actor: expect.objectContaining({ id: 'U0ALICE01' }),
      }),
    );
    expect(said).toContainEqual(
      expect.objectContaining({
        type: 'user-message',
        text: 'please also mention staging',
        actor: expect.objectContaining({ id: 'U0BOB0002', name: 'Bob Roe' }),
      }),
    );

    // Everything went to the one thread; the status message was edited in place, not reposted.
    const thread = f.slack.thread(CHANNEL, mention.ts);
    expect(
      f.slack.messages.filter(
        (m) =>
          m.channel === CHANNEL &&
          m.threadTs !== mention.ts &&
          (m.text.includes(session.id) || m.text.includes('notes')),
      ),
    ).toEqual([]);
    expect(thread.filter((m) => m.text.includes('/sessions/'))).toEqual([status]);
    expect(status.edits).toBeGreaterThan(1);
    expect(status.text).toMatch(/^:white_check_mark: \*.+\*: Done · \d+s · </);
    expect(status.blocks?.some((b) => (b as { type: string }).type === 'actions')).toBe(false);
    const answered = thread.find((m) => m.ts === question.ts)!;
    expect(answered.text).toContain('Alice Doe answered: CHANGES.md');
    expect(answered.blocks?.some((b) => (b as { type: string }).type === 'actions')).toBe(false);
    // The agent's own words came as a stream (Slack's agent surface), between the question and the end.
    const words = f.slack.agent.streams.filter((st) => st.threadTs === mention.ts && st.ts !== final.ts);
    expect(words.map((st) => st.text).join('')).toContain('Added the notes file, with staging as Bob asked.');
    expect(thread.map((m) => m.ts)).toEqual([status.ts, question.ts, ...words.map((st) => st.ts), final.ts]);
  });

  it('"stop" in the thread cancels the run and says so', async () => {
    f.setScenario((messages) =>
      assistantTurns(messages) === 0
        ? { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 60', timeout_seconds: 120 } }] }
        : { text: 'should not get here' },
    );
    const mention = appMention({ user: 'U0ALICE01', text: 'wait a minute in github.com/acme/widgets' });
    await f.postEvent(envelope(mention));
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    await waitFor(
      async () => (await f.app.store.events(session.id, { types: ['tool-start'] })).length > 0,
      'the shell call',
    );
    await f.postEvent(envelope(message({ user: 'U0BOB0002', text: 'stop', threadTs: mention.ts })));
    const done = await waitForStatus(f.app, session.id, ['cancelled', 'completed', 'failed'], 20_000);
    expect(done.status).toBe('cancelled');
    const final = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (t) => t.startsWith(':octagonal_sign: Stopped:'),
      'the stop reply',
    );
    expect(final.text).toBe(':octagonal_sign: Stopped: stopped by Bob Roe.');
  });
});
