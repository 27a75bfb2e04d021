import { existsSync } from 'node:fs';
import { readFile, statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { WebClient } from '@slack/web-api';
import { createLocalSandboxProvider } from '../../sandbox/index.ts';
import type { Config } from '../config.ts';
import { describeError } from '../core/errors.ts';
import { App } from '@octokit/app';
import { PatchbayOctokit, toPkcs8 } from '../../integrations/github/github-client.ts';
import { SLACK_BOT_SCOPES } from '../../integrations/slack/slack-scopes.ts';
import { linearClient } from '../../integrations/linear/linear-api.ts';

/** One line of `patchbay doctor`: what was checked, whether it works, and what to do when it does not. */
export type DoctorRow = { check: string; ok: boolean; detail: string; fix?: string };

export type DoctorDeps = { config: Config; log: Logger; signal: AbortSignal };

const ok = (check: string, detail: string): DoctorRow => ({ check, ok: true, detail });
const bad = (check: string, detail: string, fix: string): DoctorRow => ({ check, ok: false, detail, fix });

/** The GitHub App permissions Patchbay uses (README, "GitHub"), at the level it needs. */
export const GITHUB_APP_PERMISSIONS: Record<string, 'read' | 'write'> = {
  contents: 'write',
  issues: 'write',
  pull_requests: 'write',
  statuses: 'write',
  checks: 'read',
  actions: 'read',
  metadata: 'read',
};

/** Free space under DATA_DIR (mirrors, workspaces, the embedded database). */
export async function checkDisk({ config }: DoctorDeps): Promise<DoctorRow> {
  let dir = config.dataDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  const stats = await statfs(dir);
  const freeGiB = (stats.bavail * stats.bsize) / 1024 ** 3;
  const detail = `${freeGiB.toFixed(1)} GiB free under ${config.dataDir}`;
  return freeGiB >= 2
    ? ok('disk', detail)
    : bad('disk', detail, 'free some space or point DATA_DIR at a larger disk (mirrors and workspaces need a few GiB)');
}

/** PostgreSQL: reachable, its version, and that Patchbay's role is not a superuser. */
export async function checkDatabase({ config }: DoctorDeps): Promise<DoctorRow> {
  if (!config.databaseUrl)
    return ok(
      'database',
      `embedded PostgreSQL under ${config.dataDir} (started by patchbay serve, as a role that is not a superuser)`,
    );
  const client = new pg.Client({ connectionString: config.databaseUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string; superuser: boolean }>(
      "select current_setting('server_version') as version, rolsuper as superuser from pg_roles where rolname = current_user",
    );
    const row = rows[0]!;
    if (row.superuser)
      return bad(
        'database',
        `PostgreSQL ${row.version}, connected as a superuser`,
        'connect as a role that owns only the Patchbay database (docs/configuration.md, "Database"): a superuser can run programs on the database host',
      );
    return ok('database', `PostgreSQL ${row.version}, role is not a superuser`);
  } catch (error) {
    return bad(
      'database',
      `cannot connect: ${describeError(error)}`,
      'check DATABASE_URL (host, port, user, password) and that the server accepts connections from here',
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The sandbox, built as a worker builds it: bubblewrap and user namespaces, the limits, the egress relay. */
export async function checkSandbox({ config, log }: DoctorDeps): Promise<DoctorRow> {
  if (config.sandbox.kind === 'modal')
    return ok('sandbox', 'SANDBOX=modal: commands run in Modal sandboxes (see the modal row)');
  if (config.sandbox.kind === 'unsafe-local')
    return bad(
      'sandbox',
      'SANDBOX=unsafe-local: commands run on this host with no isolation',
      'install bubblewrap and use SANDBOX=local unless every repository and prompt is trusted',
    );
  try {
    const provider = await createLocalSandboxProvider({
      dataDir: config.dataDir,
      log,
      ttlMinutes: config.sandbox.ttlMinutes,
      mode: 'bwrap',
      limits: config.sandbox.limits,
      limitMode: config.sandbox.limitMode,
      diskQuota: config.sandbox.diskQuota,
      usrLocal: config.sandbox.usrLocal,
      ...(config.sandbox.network === 'proxy' && {
        egress: {
          policy: { rules: config.sandbox.egress.allow, protectedEndpoints: [] },
          secrets: [],
          onBlocked: () => undefined,
        },
      }),
    });
    await provider.close();
    return ok(
      'sandbox',
      `bubblewrap with user namespaces; limits by ${provider.enforcement}; disk quota by ${provider.diskQuota === 'filesystem' ? 'a file system per workspace' : 'a watch'}; network ${config.sandbox.network}`,
    );
  } catch (error) {
    return bad(
      'sandbox',
      describeError(error),
      'install bubblewrap (and socat for SANDBOX_NETWORK=proxy), allow unprivileged user namespaces, or see docs/configuration.md, "Sandbox limits"',
    );
  }
}

/** Slack: the bot token (auth.test) and its scopes against the app manifest. */
export async function checkSlack({ config, log: _log }: DoctorDeps): Promise<DoctorRow | undefined> {
  const slack = config.slack;
  if (!slack) return undefined;
  const web = new WebClient(slack.botToken, {
    slackApiUrl: slack.apiUrl,
    retryConfig: { retries: 0 },
    logger: quietSlackLogger,
  });
  try {
    const auth = await web.auth.test();
    const granted = new Set(auth.response_metadata?.scopes ?? []);
    const missing = SLACK_BOT_SCOPES.filter((scope) => !granted.has(scope));
    if (missing.length > 0) {
      return bad(
        'slack',
        `bot ${auth.user} in ${auth.team} lacks the scopes ${missing.join(', ')}`,
        "add them on the app's OAuth & Permissions page (or re-create it from slack-app-manifest.yaml), then reinstall the app",
      );
    }
    return ok(
      'slack',
      `bot ${auth.user} in ${auth.team}, every scope of the manifest (${slack.appToken ? 'Socket Mode' : 'HTTP events'})`,
    );
  } catch (error) {
    const { code, data } = error as { code?: string; data?: { error?: string } };
    if (code === 'slack_webapi_platform_error')
      return bad(
        'slack',
        `Slack refused SLACK_BOT_TOKEN (${data?.error})`,
        "copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page",
      );
    return bad(
      'slack',
      `Slack cannot be reached at ${slack.apiUrl}: ${describeError(error)}`,
      "check this host's network and SLACK_API_URL",
    );
  }
}

const quietSlackLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  setLevel: () => undefined,
  getLevel: () => 'error' as never,
  setName: () => undefined,
};

/** GitHub: the App (GET /app) with its permissions, and where it is installed. */
export async function checkGitHub({ config, signal }: DoctorDeps): Promise<DoctorRow | undefined> {
  const github = config.github;
  if (!github) return undefined;
  let privateKey = github.privateKey;
  if (!privateKey && github.privateKeyPath) {
    privateKey = await readFile(github.privateKeyPath, 'utf8').catch(() => undefined);
    if (!privateKey)
      return bad(
        'github',
        `GITHUB_APP_PRIVATE_KEY_PATH ${github.privateKeyPath} cannot be read`,
        'point it at the .pem file downloaded from the App settings',
      );
  }
  let octokit: InstanceType<typeof PatchbayOctokit>;
  try {
    const Octokit = PatchbayOctokit.defaults({
      baseUrl: github.apiUrl,
      throttle: { onRateLimit: () => false, onSecondaryRateLimit: () => false },
      request: { retries: 0, signal },
    });
    octokit = new App({ appId: github.appId, privateKey: toPkcs8(privateKey!), Octokit }).octokit as InstanceType<
      typeof PatchbayOctokit
    >;
  } catch (error) {
    return bad(
      'github',
      `the App's private key cannot be used: ${describeError(error)}`,
      'set GITHUB_APP_PRIVATE_KEY (or _PATH) to the .pem file downloaded from the App settings',
    );
  }
  try {
    const { data: app } = await octokit.request('GET /app');
    const granted = (app?.permissions ?? {}) as Record<string, string | undefined>;
    const short = Object.entries(GITHUB_APP_PERMISSIONS).filter(
      ([name, level]) => !(granted[name] === 'write' || granted[name] === level),
    );
    if (short.length > 0) {
      return bad(
        'github',
        `App ${app?.slug} lacks ${short.map(([name, level]) => `${name}: ${level}`).join(', ')}`,
        "grant them in the App's Permissions & events settings, then accept the new permissions on each installation",
      );
    }
    const { data: installations } = await octokit.request('GET /app/installations', { per_page: 100 });
    if (installations.length === 0)
      return bad(
        'github',
        `App ${app?.slug} is installed nowhere`,
        'install the App on the organizations or repositories Patchbay should work on',
      );
    return ok(
      'github',
      `App ${app?.slug} with every permission, installed on ${installations.map((i) => (i.account as { login?: string } | null)?.login ?? i.id).join(', ')}`,
    );
  } catch (error) {
    const status = (error as { status?: number }).status;
    if (status !== undefined && status < 500)
      return bad(
        'github',
        `GitHub refused the App (${status} ${describeError(error)})`,
        'check GITHUB_APP_ID and the private key (the App settings page lists both)',
      );
    return bad(
      'github',
      `GitHub cannot be reached at ${github.apiUrl}: ${describeError(error)}`,
      "check this host's network and GITHUB_API_URL",
    );
  }
}

/** Linear: the token's viewer. OAuth installs are per workspace and checked when one installs. */
export async function checkLinear({ config }: DoctorDeps): Promise<DoctorRow | undefined> {
  const linear = config.linear;
  if (!linear) return undefined;
  const token = linear.accessToken
    ? { accessToken: linear.accessToken }
    : linear.apiKey
      ? { apiKey: linear.apiKey }
      : undefined;
  if (!token) return ok('linear', 'OAuth installs: each workspace installs Patchbay through /linear/oauth/start');
  try {
    const { viewer } = await linearClient(linear.apiUrl, token).client.request<
      { viewer: { id: string; name: string } },
      Record<string, never>
    >('query patchbayDoctor { viewer { id name } }', {});
    return ok('linear', `acting as ${viewer.name}`);
  } catch (error) {
    const message = describeError(error);
    if (/authenticat|unauthori|401/i.test(message))
      return bad(
        'linear',
        `Linear refused the token (${message})`,
        'check LINEAR_ACCESS_TOKEN or LINEAR_API_KEY (Linear → Settings → API)',
      );
    return bad(
      'linear',
      `Linear cannot be reached at ${linear.apiUrl}: ${message}`,
      "check this host's network and LINEAR_API_URL",
    );
  }
}
