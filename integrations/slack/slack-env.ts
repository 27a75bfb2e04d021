import { z } from 'zod';
import { PatchbayError } from '../../src/core/errors.ts';
import { parseAllowedTeams } from './slack-teams.ts';

const emptyAsUndefined = (value: unknown) => (value === '' ? undefined : value);

/** Slack's settings. The integration is on when SLACK_BOT_TOKEN is set. */
export const slackEnvSchema = z.object({
  SLACK_BOT_TOKEN: z.preprocess(
    emptyAsUndefined,
    z.string().startsWith('xoxb-', 'must be a bot token (xoxb-…)').optional(),
  ),
  /** HTTP mode: verifies POST /slack/events. */
  SLACK_SIGNING_SECRET: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  /** Socket Mode: no public URL needed. When set, events come over the WebSocket instead of HTTP. */
  SLACK_APP_TOKEN: z.preprocess(
    emptyAsUndefined,
    z.string().startsWith('xapp-', 'must be an app-level token (xapp-…)').optional(),
  ),
  SLACK_API_URL: z.preprocess(emptyAsUndefined, z.url().default('https://slack.com/api/')),
  /** Sign in with Slack (OpenID Connect): proves who opens a "connect github" link. */
  SLACK_CLIENT_ID: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  SLACK_CLIENT_SECRET: z.preprocess(emptyAsUndefined, z.string().min(1).optional()),
  /** Other organisations (Slack Connect) whose people may ask: comma-separated team ids. */
  SLACK_ALLOWED_TEAMS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^\s*T[A-Z0-9]+\s*(,\s*T[A-Z0-9]+\s*)*$/, 'must be comma-separated Slack team ids (T…)')
      .optional(),
  ),
});
export type SlackEnv = z.infer<typeof slackEnvSchema>;

export type SlackConfig = {
  botToken: string;
  signingSecret?: string;
  appToken?: string;
  apiUrl: string;
  /** Teams other than the installing workspace whose people may ask (SLACK_ALLOWED_TEAMS). */
  allowedTeams?: readonly string[];
  /** The app's client id and secret, for Sign in with Slack (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET). */
  oidc?: { clientId: string; clientSecret: string };
};

/** The Slack part of the config, or undefined when Slack is not configured. */
export function slackConfigFromEnv(env: SlackEnv): SlackConfig | undefined {
  if (!env.SLACK_BOT_TOKEN) return undefined;
  if (!env.SLACK_SIGNING_SECRET && !env.SLACK_APP_TOKEN) {
    throw new PatchbayError(
      'config_invalid',
      'SLACK_BOT_TOKEN is set but neither SLACK_SIGNING_SECRET (HTTP events) nor SLACK_APP_TOKEN (Socket Mode) is',
    );
  }
  if (Boolean(env.SLACK_CLIENT_ID) !== Boolean(env.SLACK_CLIENT_SECRET))
    throw new PatchbayError(
      'config_invalid',
      "Set both SLACK_CLIENT_ID and SLACK_CLIENT_SECRET (the app's Basic Information page), or neither",
    );
  return {
    botToken: env.SLACK_BOT_TOKEN,
    ...(env.SLACK_SIGNING_SECRET && { signingSecret: env.SLACK_SIGNING_SECRET }),
    ...(env.SLACK_APP_TOKEN && { appToken: env.SLACK_APP_TOKEN }),
    apiUrl: env.SLACK_API_URL.endsWith('/') ? env.SLACK_API_URL : `${env.SLACK_API_URL}/`,
    ...(env.SLACK_ALLOWED_TEAMS && { allowedTeams: parseAllowedTeams(env.SLACK_ALLOWED_TEAMS) }),
    ...(env.SLACK_CLIENT_ID &&
      env.SLACK_CLIENT_SECRET && { oidc: { clientId: env.SLACK_CLIENT_ID, clientSecret: env.SLACK_CLIENT_SECRET } }),
  };
}
