import type { SlackTeams } from './slack-teams.ts';

/** Who the bot is in Slack: its user id, and the workspaces it takes requests from. */
export type SlackBotIdentity = { botUserId: string; teams: SlackTeams };

/**
 * The bot's identity, learned once at the Slack module's start (auth.test names the bot and the
 * workspace its token belongs to). A delivery worked before that cannot tell a mention of the bot
 * from any other: `current` throws, and the pipeline retries it later.
 */
export class SlackIdentity {
  #known: SlackBotIdentity | undefined;

  /** Called by the module's start, once auth.test answered. */
  learn(identity: SlackBotIdentity): void {
    this.#known = identity;
  }

  /** The identity auth.test reported; throws (retry later) until the module started. */
  current(): SlackBotIdentity {
    if (!this.#known) throw new Error('the Slack integration has not connected yet');
    return this.#known;
  }
}
