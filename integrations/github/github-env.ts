import { z } from 'zod';
import { PatchbayError } from '../../src/core/errors.ts';

const emptyAsUndefined = (value: unknown) => (value === '' ? undefined : value);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(emptyAsUndefined, schema.optional());

/** GitHub's environment variables, merged into the root schema by src/config.ts. */
export const githubEnvSchema = z.object({
  GITHUB_APP_ID: optional(z.string().regex(/^\d+$/, 'must be the numeric App ID')),
  /** PEM text; PKCS#1 (as GitHub downloads it) or PKCS#8. `\n` escapes are accepted. */
  GITHUB_APP_PRIVATE_KEY: optional(z.string().min(1)),
  GITHUB_APP_PRIVATE_KEY_PATH: optional(z.string().min(1)),
  GITHUB_WEBHOOK_SECRET: optional(z.string().min(1)),
  GITHUB_API_URL: z.preprocess(emptyAsUndefined, z.url().default('https://api.github.com')),
  GITHUB_GIT_URL: z.preprocess(emptyAsUndefined, z.url().default('https://github.com')),
  GITHUB_OAUTH_CLIENT_ID: optional(z.string().min(1)),
  GITHUB_OAUTH_CLIENT_SECRET: optional(z.string().min(1)),
  /** Pull requests open as drafts unless this is "false". */
  GITHUB_PR_DRAFT: z.preprocess(emptyAsUndefined, z.enum(['true', 'false']).default('true')),
  /** Adding this label to an issue starts a session for it. */
  GITHUB_TRIGGER_LABEL: z.preprocess(emptyAsUndefined, z.string().min(1).default('patchbay')),
  /** GitHub logins (comma-separated) that may sign in to the web page with GitHub. */
  WEB_SIGNIN_GITHUB_USERS: optional(z.string().min(1)),
  /** Members of this GitHub organization may sign in to the web page with GitHub. */
  WEB_SIGNIN_GITHUB_ORG: optional(
    z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, 'must be an organization login'),
  ),
  /** Closed pull requests the scout reads per repository. */
  GITHUB_SCOUT_PULLS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(300).default(50)),
  /** Hours after which a repository's scouted rules are refreshed in the background. */
  GITHUB_SCOUT_MAX_AGE_HOURS: z.preprocess(emptyAsUndefined, z.coerce.number().positive().default(24)),
  /** Seconds between looks for webhook deliveries that never reached Patchbay (redelivered through the App's API). */
  GITHUB_REDELIVERY_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().positive().default(300)),
  /**
   * How GitHub's events reach Patchbay: `webhooks` (GitHub posts them to PUBLIC_URL/github/webhooks)
   * or `polling` (Patchbay asks GitHub's REST API for them, for a host no webhook can reach).
   */
  GITHUB_EVENTS: z.preprocess(emptyAsUndefined, z.enum(['webhooks', 'polling']).default('webhooks')),
  /** Seconds between looks in polling mode (conditional requests: an unchanged list costs no rate limit). */
  GITHUB_POLL_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().min(1).max(3600).default(30)),
  /** Key for secrets stored at rest (users' GitHub tokens): at least 32 characters. */
  PATCHBAY_SECRET_KEY: optional(z.string().min(32, 'must be at least 32 characters')),
});
export type GitHubEnv = z.infer<typeof githubEnvSchema>;

export type GitHubConfig = {
  appId: string;
  privateKey?: string;
  privateKeyPath?: string;
  /** Absent only in polling mode, where no webhook route is served. */
  webhookSecret?: string;
  /** Webhooks posted by GitHub, or the REST API polled every `pollIntervalMs`. */
  events: { mode: 'webhooks' } | { mode: 'polling'; pollIntervalMs: number };
  apiUrl: string;
  gitUrl: string;
  oauth?: { clientId: string; clientSecret: string };
  /** Who may sign in to the web page with GitHub: these logins (lower case) and this org's members. */
  pageSignIn?: { users: string[]; org?: string };
  secretKey?: string;
  draft: boolean;
  triggerLabel: string;
  /** The scout: closed pull requests read per pass, and when a pass is stale. */
  scout: { pulls: number; maxAgeHours: number };
  /** Between looks for lost webhook deliveries. */
  redeliveryIntervalMs: number;
};

/**
 * The GitHub part of the config, or undefined when GitHub is not configured. A half-configured App
 * fails here with the names of what is missing, not at the first webhook.
 */
export function githubConfigFromEnv(e: GitHubEnv): GitHubConfig | undefined {
  const any = e.GITHUB_APP_ID ?? e.GITHUB_APP_PRIVATE_KEY ?? e.GITHUB_APP_PRIVATE_KEY_PATH ?? e.GITHUB_WEBHOOK_SECRET;
  if (any === undefined) return undefined;
  const missing = [
    !e.GITHUB_APP_ID && 'GITHUB_APP_ID',
    !e.GITHUB_APP_PRIVATE_KEY &&
      !e.GITHUB_APP_PRIVATE_KEY_PATH &&
      'GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_PATH',
    !e.GITHUB_WEBHOOK_SECRET && e.GITHUB_EVENTS === 'webhooks' && 'GITHUB_WEBHOOK_SECRET (or GITHUB_EVENTS=polling)',
  ].filter(Boolean);
  if (missing.length)
    throw new PatchbayError('config_invalid', `GitHub is partly configured; also set ${missing.join(', ')}`);
  const oauthParts = [e.GITHUB_OAUTH_CLIENT_ID, e.GITHUB_OAUTH_CLIENT_SECRET].filter(Boolean).length;
  if (oauthParts === 1)
    throw new PatchbayError(
      'config_invalid',
      'Set both GITHUB_OAUTH_CLIENT_ID and GITHUB_OAUTH_CLIENT_SECRET, or neither',
    );
  if (oauthParts === 2 && !e.PATCHBAY_SECRET_KEY) {
    throw new PatchbayError(
      'config_invalid',
      'GitHub sign-in stores user tokens encrypted: set PATCHBAY_SECRET_KEY (32+ random characters) to enable it',
    );
  }
  const users = (e.WEB_SIGNIN_GITHUB_USERS ?? '')
    .split(',')
    .map((u) => u.trim().toLowerCase())
    .filter(Boolean);
  const pageSignIn =
    users.length || e.WEB_SIGNIN_GITHUB_ORG
      ? { users, ...(e.WEB_SIGNIN_GITHUB_ORG && { org: e.WEB_SIGNIN_GITHUB_ORG }) }
      : undefined;
  if (pageSignIn && oauthParts !== 2) {
    throw new PatchbayError(
      'config_invalid',
      'WEB_SIGNIN_GITHUB_USERS / WEB_SIGNIN_GITHUB_ORG need GitHub sign-in: set GITHUB_OAUTH_CLIENT_ID and GITHUB_OAUTH_CLIENT_SECRET',
    );
  }
  return {
    appId: e.GITHUB_APP_ID!,
    ...(e.GITHUB_APP_PRIVATE_KEY && { privateKey: e.GITHUB_APP_PRIVATE_KEY }),
    ...(e.GITHUB_APP_PRIVATE_KEY_PATH && { privateKeyPath: e.GITHUB_APP_PRIVATE_KEY_PATH }),
    ...(e.GITHUB_WEBHOOK_SECRET && { webhookSecret: e.GITHUB_WEBHOOK_SECRET }),
    events:
      e.GITHUB_EVENTS === 'polling'
        ? { mode: 'polling', pollIntervalMs: e.GITHUB_POLL_SECONDS * 1000 }
        : { mode: 'webhooks' },
    apiUrl: e.GITHUB_API_URL.replace(/\/+$/, ''),
    gitUrl: e.GITHUB_GIT_URL.replace(/\/+$/, ''),
    ...(oauthParts === 2 && {
      oauth: { clientId: e.GITHUB_OAUTH_CLIENT_ID!, clientSecret: e.GITHUB_OAUTH_CLIENT_SECRET! },
    }),
    ...(pageSignIn && { pageSignIn }),
    ...(e.PATCHBAY_SECRET_KEY && { secretKey: e.PATCHBAY_SECRET_KEY }),
    draft: e.GITHUB_PR_DRAFT === 'true',
    triggerLabel: e.GITHUB_TRIGGER_LABEL,
    scout: { pulls: e.GITHUB_SCOUT_PULLS, maxAgeHours: e.GITHUB_SCOUT_MAX_AGE_HOURS },
    redeliveryIntervalMs: e.GITHUB_REDELIVERY_SECONDS * 1000,
  };
}
