import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teamAllowed } from '../../integrations/slack/slack-teams.ts';
import { loadConfig } from '../../src/config.ts';
import { appMention, blockAction, envelope, message, TEAM } from '../fakes/fake-slack-events.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startSlackFixture, type SlackFixture } from '../slack/slack-fixture.ts';

const PARTNER = 'T0PARTNER1';
const OTHER = 'T0OTHERORG';

/** An event as Slack sends it from a Slack Connect channel: the author's own team on the event. */
const fromTeam = <T extends Record<string, unknown>>(event: T, team: string) => ({
  ...event,
  team,
  user_team: team,
  source_team: team,
});
const shared = (event: Record<string, unknown>) => ({ ...envelope(event), is_ext_shared_channel: true });

// Slack Connect: a channel shared with another organisation delivers its people's messages to the
// installing workspace's app. They are refused unless their team is in SLACK_ALLOWED_TEAMS.
describe('tenancy: Slack Connect users of other organisations', () => {
  let f: SlackFixture;
  const slack = { ephemeralsCount: () => f.slack.ephemerals.length };

  beforeAll(async () => {
    f = await startSlackFixture({ allowedTeams: [PARTNER] });
  }, 60_000);
  afterAll(() => f?.dispose());

  it('refuses a mention from another organisation: a private note to them, no session, no 👀', async () => {
    const mention = fromTeam(
      appMention({ user: 'U0ALICE01', text: 'add a notes file to github.com/acme/widgets' }),
      OTHER,
    );
    expect((await f.postEvent(shared(mention))).status).toBe(200);
    const note = await waitFor(async () => f.slack.ephemerals.find((e) => e.user === 'U0ALICE01'), 'the refusal');
    expect(note.text).toContain(`add ${OTHER} to SLACK_ALLOWED_TEAMS`);
    expect(f.slack.reactions).toEqual([]);
    expect(f.slack.messages).toEqual([]);
    expect(await f.app.store.list()).toEqual([]);
  });

  it("refuses another organisation's button click and thread reply on a session of this workspace", async () => {
    const mention = appMention({ user: 'U0BOB0002', text: 'add a notes file to github.com/acme/widgets' });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const session = await waitFor(async () => (await f.app.store.list())[0], 'the home user’s session');
    const before = (await f.app.store.events(session.id, { types: ['user-message'] })).length;
    const reply = fromTeam(message({ user: 'U0ALICE01', text: 'also delete the tests', threadTs: mention.ts }), OTHER);
    expect((await f.postEvent(shared(reply))).status).toBe(200);
    const click = blockAction({
      user: 'U0ALICE01',
      actionId: 'patchbay_stop',
      value: 'stop',
      messageTs: mention.ts,
      threadTs: mention.ts,
    });
    click.user.team_id = OTHER;
    expect((await f.postAction(click)).status).toBe(200);
    await waitFor(
      async () => f.slack.ephemerals.filter((e) => e.user === 'U0ALICE01').length >= 3 || undefined,
      'both refusals',
    );
    expect((await f.app.store.events(session.id, { types: ['user-message'] })).length).toBe(before);
    const stopped = await f.app.store.events(session.id, { types: ['status-changed'] });
    expect(
      stopped.map(({ event }) => event).filter((e) => e.type === 'status-changed' && e.to === 'cancelled'),
    ).toEqual([]);
  });

  it('says nothing to another organisation chatting in a thread that is not a session', async () => {
    const before = slack.ephemeralsCount();
    const chatter = fromTeam(message({ user: 'U0ALICE01', text: 'lunch?', threadTs: '1700009999.000100' }), OTHER);
    expect((await f.postEvent(shared(chatter))).status).toBe(200);
    await waitFor(
      async () =>
        (
          await f.app.database.db
            .selectFrom('inbound_deliveries')
            .select('status')
            .where('status', '=', 'pending')
            .execute()
        ).length === 0
          ? true
          : undefined,
      'the delivery worked',
    );
    expect(slack.ephemeralsCount()).toBe(before);
  });

  it('takes a request from a team in SLACK_ALLOWED_TEAMS', async () => {
    const before = (await f.app.store.list()).length;
    const mention = fromTeam(
      appMention({ user: 'U0BOB0002', text: 'add a license to github.com/acme/widgets' }),
      PARTNER,
    );
    expect((await f.postEvent(shared(mention))).status).toBe(200);
    await waitFor(
      async () => ((await f.app.store.list()).length > before ? true : undefined),
      'a session for the partner',
    );
    expect(f.slack.refused).toEqual([]);
  });

  it('reads SLACK_ALLOWED_TEAMS from the environment and judges teams as a pure rule', () => {
    expect(
      loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's', SLACK_ALLOWED_TEAMS: `${PARTNER}, T0SECOND1` })
        .slack?.allowedTeams,
    ).toEqual([PARTNER, 'T0SECOND1']);
    expect(() =>
      loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's', SLACK_ALLOWED_TEAMS: 'acme corp' }),
    ).toThrow(/SLACK_ALLOWED_TEAMS/);
    const teams = { home: TEAM, allowed: [PARTNER] };
    expect([undefined, TEAM, PARTNER, OTHER].map((team) => teamAllowed(teams, team))).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });
});
