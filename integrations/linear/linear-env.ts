import { z } from 'zod';
import { PatchbayError } from '../../src/core/errors.ts';

const emptyAsUndefined = (value: unknown) => (value === '' ? undefined : value);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(emptyAsUndefined, schema.optional());

/** Linear's environment variables, merged into the root schema by src/config.ts. */
export const linearEnvSchema = z.object({
  /** An OAuth access token of the app installed with actor=app (the usual choice for an agent). */
  LINEAR_ACCESS_TOKEN: optional(z.string().min(1)),
  /** A personal API key instead (activities then appear as that person). */
  LINEAR_API_KEY: optional(z.string().min(1)),
  LINEAR_WEBHOOK_SECRET: optional(z.string().min(1)),
  LINEAR_API_URL: z.preprocess(emptyAsUndefined, z.url().default('https://api.linear.app/graphql')),
  LINEAR_CLIENT_ID: optional(z.string().min(1)),
  LINEAR_CLIENT_SECRET: optional(z.string().min(1)),
  /** Team key → repository: `ENG=https://github.com/acme/shop,WEB=acme/web`. */
  LINEAR_TEAM_REPOS: optional(z.string().min(1)),
  /**
   * Seconds of silence after which a running session posts a thought saying what it is doing;
   * Linear calls a session stale after 30 minutes without an activity. Default 1200 (20 minutes).
   */
  LINEAR_KEEPALIVE_SECONDS: z.preprocess(
    emptyAsUndefined,
    z.coerce.number().int().min(1).max(1740, 'must stay under Linear’s 30 minutes (at most 1740)').default(1200),
  ),
  /** The Linear workspaces (organization ids) this Patchbay works for; unset: any that installs it. */
  LINEAR_ALLOWED_ORGS: optional(
    z
      .string()
      .regex(/^[\s,]*[A-Za-z0-9-]+(\s*,\s*[A-Za-z0-9-]+)*[\s,]*$/, 'must be comma-separated Linear organization ids'),
  ),
});
export type LinearEnv = z.infer<typeof linearEnvSchema>;

export type LinearConfig = {
  accessToken?: string;
  apiKey?: string;
  webhookSecret: string;
  apiUrl: string;
  oauth?: { clientId: string; clientSecret: string; authorizeUrl: string; tokenUrl: string };
  /** Team key (upper-case) → `owner/repo` or a repository URL, as written. */
  teamRepos: Record<string, string>;
  /** PATCHBAY_SECRET_KEY, which encrypts the tokens the install flow stores. */
  secretKey?: string;
  /** LINEAR_ALLOWED_ORGS: the only workspaces whose webhooks and installs are taken; unset: any. */
  allowedOrgs?: readonly string[];
  /** LINEAR_KEEPALIVE_SECONDS, in ms: silence after which a running session says what it is doing. */
  keepAliveMs?: number;
};

/**
 * The Linear part of the config, or undefined when Linear is not configured. Linear is on once a
 * webhook secret is set; it then needs a token (LINEAR_ACCESS_TOKEN or LINEAR_API_KEY) or the OAuth
 * install flow (LINEAR_CLIENT_ID and LINEAR_CLIENT_SECRET) to answer.
 */
export function linearConfigFromEnv(
  e: LinearEnv & { PATCHBAY_SECRET_KEY?: string | undefined },
): LinearConfig | undefined {
  const any =
    e.LINEAR_WEBHOOK_SECRET ?? e.LINEAR_ACCESS_TOKEN ?? e.LINEAR_API_KEY ?? e.LINEAR_CLIENT_ID ?? e.LINEAR_TEAM_REPOS;
  if (any === undefined) return undefined;
  if (!e.LINEAR_WEBHOOK_SECRET)
    throw new PatchbayError(
      'config_invalid',
      "Linear is partly configured; also set LINEAR_WEBHOOK_SECRET (the webhook signing secret from the app's settings)",
    );
  const oauthParts = [e.LINEAR_CLIENT_ID, e.LINEAR_CLIENT_SECRET].filter(Boolean).length;
  if (oauthParts === 1)
    throw new PatchbayError('config_invalid', 'Set both LINEAR_CLIENT_ID and LINEAR_CLIENT_SECRET, or neither');
  if (!e.LINEAR_ACCESS_TOKEN && !e.LINEAR_API_KEY && oauthParts === 0) {
    throw new PatchbayError(
      'config_invalid',
      'Linear needs LINEAR_ACCESS_TOKEN (an actor=app OAuth token), LINEAR_API_KEY, or LINEAR_CLIENT_ID and LINEAR_CLIENT_SECRET for the install flow',
    );
  }
  if (oauthParts === 2 && !e.PATCHBAY_SECRET_KEY) {
    throw new PatchbayError(
      'config_invalid',
      'The Linear install flow stores tokens encrypted: set PATCHBAY_SECRET_KEY (32+ random characters) to use LINEAR_CLIENT_ID',
    );
  }
  const apiUrl = new URL(e.LINEAR_API_URL);
  if (apiUrl.protocol !== 'https:' && !['localhost', '127.0.0.1', '[::1]'].includes(apiUrl.hostname)) {
    throw new PatchbayError(
      'config_invalid',
      'LINEAR_API_URL must use https (plain http only for a local development server)',
    );
  }
  return {
    ...(e.LINEAR_ACCESS_TOKEN && { accessToken: e.LINEAR_ACCESS_TOKEN }),
    ...(e.LINEAR_API_KEY && { apiKey: e.LINEAR_API_KEY }),
    webhookSecret: e.LINEAR_WEBHOOK_SECRET,
    apiUrl: e.LINEAR_API_URL,
    ...(oauthParts === 2 && {
      oauth: {
        clientId: e.LINEAR_CLIENT_ID!,
        clientSecret: e.LINEAR_CLIENT_SECRET!,
        authorizeUrl: 'https://linear.app/oauth/authorize',
        // The token endpoint lives on the API host (api.linear.app/oauth/token), so tests reach the fake too.
        tokenUrl: new URL('/oauth/token', e.LINEAR_API_URL).toString(),
      },
    }),
    teamRepos: parseTeamRepos(e.LINEAR_TEAM_REPOS),
    keepAliveMs: e.LINEAR_KEEPALIVE_SECONDS * 1000,
    ...(e.PATCHBAY_SECRET_KEY && { secretKey: e.PATCHBAY_SECRET_KEY }),
    ...(e.LINEAR_ALLOWED_ORGS && {
      allowedOrgs: e.LINEAR_ALLOWED_ORGS.split(',')
        .map((id) => id.trim())
        .filter(Boolean),
    }),
  };
}

/** `ENG=https://github.com/acme/shop,WEB=acme/web` → {ENG: …, WEB: …}; a malformed entry fails start-up. */
export function parseTeamRepos(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const entry of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq).trim();
    const repo = entry.slice(eq + 1).trim();
    if (eq <= 0 || !/^[A-Za-z0-9_-]+$/.test(key) || !repo) {
      throw new PatchbayError(
        'config_invalid',
        `LINEAR_TEAM_REPOS entry "${entry}" is not TEAMKEY=repository (for example ENG=https://github.com/acme/shop)`,
      );
    }
    out[key.toUpperCase()] = repo;
  }
  return out;
}
