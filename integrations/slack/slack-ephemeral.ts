import type { Logger } from 'pino';
import type { Actor } from '../../src/core/actor.ts';
import type { Interpretation } from '../../src/core/delivery-interpreter.ts';
import type { ActorDirectory } from './slack-actors.ts';
import type { SlackMessageEvent } from './slack-payloads.ts';
import type { SlackThread } from './slack-store.ts';
import { foreignTeamText } from './slack-teams.ts';
import type { SlackWeb } from './slack-web.ts';

/** "connect github", said to the bot: the person gets a private sign-in link. */
export const CONNECT_GITHUB = /^(connect|link)\s+(my\s+)?github( account)?[.!]?$/i;

/** Replies only the person who wrote sees (ephemeral); nothing else comes of their request. */
type Ignored = Extract<Interpretation, { kind: 'ignore' }>;

/**
 * The link is bound to the person who asked, so it goes to them alone (ephemeral): whoever opens
 * it attaches their GitHub account to that person, and pull requests they ask for open as them.
 */
export async function connectGitHub(
  deps: { web: SlackWeb; actors: ActorDirectory; signInLink?: (actor: Actor) => string },
  event: SlackMessageEvent,
  thread: SlackThread,
): Promise<Ignored> {
  const user = event.user!;
  const text = deps.signInLink
    ? `Connect your GitHub account so the pull requests you ask for open under your name (the link works for an hour): ${deps.signInLink(await deps.actors.get(user))}`
    : 'GitHub sign-in is not set up on this Patchbay (GITHUB_OAUTH_CLIENT_ID, GITHUB_OAUTH_CLIENT_SECRET and PATCHBAY_SECRET_KEY, and Sign in with Slack: SLACK_CLIENT_ID and SLACK_CLIENT_SECRET); pull requests open as the Patchbay app.';
  await deps.web.chat.postEphemeral({
    channel: thread.channel,
    user,
    text,
    ...(event.thread_ts && { thread_ts: event.thread_ts }),
  });
  return { kind: 'ignore', reason: 'sent a GitHub sign-in link' };
}

/** Slack Connect: a person of another organisation is told, privately, and nothing else happens. */
export async function refuseForeign(
  deps: { web: SlackWeb; log: Logger },
  to: { channel: string; user: string; userTeam: string; threadTs?: string | undefined },
): Promise<Ignored> {
  const { channel, user, userTeam, threadTs } = to;
  deps.log.info({ userTeam, user }, 'Slack request from another organisation refused (not in SLACK_ALLOWED_TEAMS)');
  await deps.web.chat.postEphemeral({
    channel,
    user,
    text: foreignTeamText(userTeam),
    ...(threadTs && { thread_ts: threadTs }),
  });
  return { kind: 'ignore', reason: `from team ${userTeam}, which is not this workspace nor in SLACK_ALLOWED_TEAMS` };
}
