import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { PatchbayError } from './core/errors.ts';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../sandbox/sandbox-limits.ts';
import { DEFAULT_SANDBOX_USER, type SandboxUser } from '../sandbox/sandbox-user.ts';
import { parseEgressAllow, type EgressRule } from '../sandbox/egress-policy.ts';
import type { SecretRoute } from '../sandbox/egress-proxy.ts';
import type { ModalSettings } from '../sandbox/modal/modal-sandbox-provider.ts';
import type { ModelProviderConfig } from './models/create-model-provider.ts';
import { modelConfigFromEnv, modelEnvSchema } from './models/model-config.ts';
import { slackConfigFromEnv, slackEnvSchema, type SlackConfig } from '../integrations/slack/slack-env.ts';
import { githubConfigFromEnv, githubEnvSchema, type GitHubConfig } from '../integrations/github/github-env.ts';
import { linearConfigFromEnv, linearEnvSchema, type LinearConfig } from '../integrations/linear/linear-env.ts';

const emptyAsUndefined = (value: unknown) => (value === '' ? undefined : value);
const optionalString = z.preprocess(emptyAsUndefined, z.string().optional());
const positiveInt = (fallback: number) =>
  z.preprocess(emptyAsUndefined, z.coerce.number().int().positive().default(fallback));

/** Every setting Patchbay reads from the environment. Integrations add their own in their issues. */
export const envSchema = z
  .object({
    PORT: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).max(65535).default(3000)),
    PUBLIC_URL: z.preprocess(emptyAsUndefined, z.url().optional()),
    DATA_DIR: z.preprocess(emptyAsUndefined, z.string().default('./.patchbay')),
    DATABASE_URL: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// connection string')
        .optional(),
    ),
    PATCHBAY_API_TOKEN: z.preprocess(emptyAsUndefined, z.string().min(16, 'must be at least 16 characters').optional()),
    /** For MODEL_PROVIDER=scripted: a JSON file with {"turns": [...]}. */
    SCRIPTED_SCENARIO: optionalString,
    SANDBOX: z.preprocess(emptyAsUndefined, z.enum(['local', 'unsafe-local', 'modal']).default('local')),
    // --- Modal sandboxes (SANDBOX=modal); the SDK itself reads MODAL_SERVER_URL and ~/.modal.toml ---
    MODAL_TOKEN_ID: z.preprocess(
      emptyAsUndefined,
      z.string().regex(/^ak-/, 'must be a Modal token id (ak-…)').optional(),
    ),
    MODAL_TOKEN_SECRET: z.preprocess(
      emptyAsUndefined,
      z.string().regex(/^as-/, 'must be a Modal token secret (as-…)').optional(),
    ),
    MODAL_APP_NAME: z.preprocess(
      emptyAsUndefined,
      z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be a Modal app name (letters, digits, . _ -)')
        .default('patchbay'),
    ),
    /** A registry image or an image id (im-…); unset: Node 22 on Debian with git, ripgrep and Python added. */
    MODAL_IMAGE: optionalString,
    MODAL_CPU: z.preprocess(emptyAsUndefined, z.coerce.number().positive().max(64).optional()),
    MODAL_MEMORY_MIB: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(128).optional()),
    /** Modal's hard limit on a sandbox's life (at most 24 hours); the work is snapshotted before it. */
    MODAL_SANDBOX_TIMEOUT_MINUTES: z.preprocess(
      emptyAsUndefined,
      z.coerce
        .number()
        .int()
        .min(10)
        .max(24 * 60)
        .default(120),
    ),
    MODAL_IDLE_TIMEOUT_MINUTES: z.preprocess(
      emptyAsUndefined,
      z.coerce
        .number()
        .int()
        .min(1)
        .max(24 * 60)
        .default(15),
    ),
    /** Snapshot a busy sandbox after a step when the last snapshot is older than this; 0: after every step. */
    MODAL_SNAPSHOT_EVERY_MINUTES: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).default(10)),
    MODAL_SNAPSHOT_TTL_DAYS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(365).default(30)),
    /** Modal's exit snapshots (experimental in the SDK): the filesystem as it was when a sandbox ended. */
    MODAL_EXIT_SNAPSHOTS: z.preprocess(emptyAsUndefined, z.enum(['true', 'false']).default('true')),
    /** Minutes between a worker's looks at the repositories' setup images; 0: never refreshed in the background. */
    MODAL_TEMPLATE_REFRESH_MINUTES: z.preprocess(
      emptyAsUndefined,
      z.coerce
        .number()
        .int()
        .min(0)
        .max(7 * 24 * 60)
        .default(60),
    ),
    /** How many commits the default branch must be ahead of a setup image's base before it is refreshed. */
    MODAL_TEMPLATE_REFRESH_COMMITS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).default(50)),
    SANDBOX_NETWORK: z.preprocess(emptyAsUndefined, z.enum(['proxy', 'none', 'host']).default('proxy')),
    /** Comma-separated host patterns the egress proxy lets through; `default` is the registry list. */
    SANDBOX_EGRESS_ALLOW: z.preprocess(emptyAsUndefined, z.string().default('default')),
    /** JSON: {"<name>": {"url", "header", "env", "prefix"?}}, credentials the proxy adds for the sandbox. */
    SANDBOX_SECRETS: optionalString,
    SANDBOX_TTL_MINUTES: positiveInt(24 * 60),
    // Resource limits of each sandbox command (see sandbox/sandbox-limits.ts and docs/configuration.md).
    SANDBOX_LIMITS: z.preprocess(emptyAsUndefined, z.enum(['auto', 'cgroup', 'rlimit']).default('auto')),
    SANDBOX_MAX_PROCS: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(16).default(DEFAULT_SANDBOX_LIMITS.maxProcs),
    ),
    SANDBOX_MEMORY_MB: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(64).default(DEFAULT_SANDBOX_LIMITS.memoryMb),
    ),
    SANDBOX_CPU_SECONDS: positiveInt(DEFAULT_SANDBOX_LIMITS.cpuSeconds),
    SANDBOX_FILE_MB: positiveInt(DEFAULT_SANDBOX_LIMITS.fileMb),
    SANDBOX_DISK_MB: positiveInt(DEFAULT_SANDBOX_LIMITS.diskMb),
    // 'auto': as root, each workspace a file system of SANDBOX_DISK_MB (a hard cap); else watched.
    SANDBOX_DISK_QUOTA: z.preprocess(emptyAsUndefined, z.enum(['auto', 'filesystem', 'watch']).default('auto')),
    SANDBOX_TMP_MB: positiveInt(DEFAULT_SANDBOX_LIMITS.tmpMb),
    SANDBOX_USR_LOCAL: z.preprocess(emptyAsUndefined, z.enum(['true', 'false']).default('false')),
    SANDBOX_UID: z.preprocess(
      emptyAsUndefined,
      z.coerce.number().int().min(1).max(4_294_967_294).default(DEFAULT_SANDBOX_USER.uid),
    ),
    SANDBOX_GID: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(4_294_967_294).optional()),
    LOG_LEVEL: z.preprocess(
      emptyAsUndefined,
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    ),
    WORKER_CONCURRENCY: positiveInt(2),
    /** Runs at once over every worker process sharing the database; unset: no limit beyond each worker's. */
    MAX_RUNNING_SESSIONS: z.preprocess(emptyAsUndefined, z.coerce.number().int().positive().optional()),
    /** `patchbay worker` serves GET /healthz on this port (it has no API); unset: none. */
    WORKER_HEALTH_PORT: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).max(65535).optional()),
    /** Days a finished webhook delivery is kept (0: forever). */
    DELIVERY_RETENTION_DAYS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).default(30)),
    WEB_SESSION_HOURS: z.preprocess(
      emptyAsUndefined,
      z.coerce
        .number()
        .positive()
        .max(24 * 90)
        .default(12),
    ),
    /** Largest checkpoint of a session's work kept in the database, in MiB. */
    CHECKPOINT_MAX_MB: positiveInt(256),
    /** Seconds without a heartbeat before a run counts as crashed and is picked up again (at least 10). */
    QUEUE_HEARTBEAT_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(10).default(30)),
    /** Seconds a run's lease lasts unless renewed: a paused or cut-off worker's run is taken over after it. */
    RUN_LEASE_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(3).default(30)),
    /** How often the queue looks for crashed runs. */
    QUEUE_MONITOR_SECONDS: positiveInt(15),
    /** On SIGTERM, how long running steps get to finish before their runs are handed back to the queue. */
    SHUTDOWN_GRACE_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).default(10)),
    RUN_MAX_MINUTES: positiveInt(60),
    RUN_MAX_TOKENS: positiveInt(5_000_000),
    RUN_MAX_TOOL_CALLS: positiveInt(500),
    /** Let the API take a path on the server's disk as a repository (the CLI always can). */
    PATCHBAY_ALLOW_LOCAL_REPOS: z.preprocess(emptyAsUndefined, z.enum(['true', 'false']).default('false')),
    /** Comma-separated branches never pushed to, on top of main, master, the base and the default branch. */
    PROTECTED_BRANCHES: z.preprocess(emptyAsUndefined, z.string().default('')),
    // --- harness gates ---
    /** Dollars (list prices) a task may spend before it pauses and asks to continue. */
    RUN_MAX_COST_USD: z.preprocess(emptyAsUndefined, z.coerce.number().positive().default(10)),
    /** Time limit of one setup or check command (fractions allowed: 0.5 is 30 s). */
    CHECK_TIMEOUT_MINUTES: z.preprocess(emptyAsUndefined, z.coerce.number().positive().default(10)),
    /** Check-fix rounds a request gets before the session stops and asks people. */
    GATE_MAX_CHECK_ROUNDS: positiveInt(5),
    /** The verifier's model name (same provider and key as MODEL); MODEL when unset. */
    VERIFIER_MODEL: optionalString,
    // --- end harness gates ---
    /** OpenTelemetry: where traces go (OTLP over HTTP, JSON); unset: no traces. */
    OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(emptyAsUndefined, z.url().optional()),
  })
  .extend(modelEnvSchema.shape)
  .extend(slackEnvSchema.shape)
  .extend(githubEnvSchema.shape)
  .extend(linearEnvSchema.shape);
export type Env = z.infer<typeof envSchema>;

/** The Modal provider's settings, and the SDK's credentials when they come from the environment. */
export type ModalConfig = ModalSettings & {
  tokenId?: string;
  tokenSecret?: string;
  /** Where the SDK looks for credentials when the tokens are not set (MODAL_CONFIG_PATH, else ~/.modal.toml). */
  configFile: string;
  /** The background refresh of setup images (absent: off). */
  setupImageRefresh?: { everyMinutes: number; minCommits: number };
};

/** The image sandboxes start from when MODAL_IMAGE is unset: what the harness and agent tools need. */
export const DEFAULT_MODAL_IMAGE = 'node:22-bookworm-slim';
export const DEFAULT_MODAL_IMAGE_COMMANDS = [
  'RUN apt-get update && apt-get install -y --no-install-recommends git ripgrep python3 python3-venv ca-certificates chromium fonts-dejavu-core && rm -rf /var/lib/apt/lists/*',
  'RUN mkdir -p /workspace',
];

export type Config = {
  port: number;
  publicUrl: string;
  dataDir: string;
  databaseUrl?: string;
  apiToken?: string;
  /** How long a web page sign-in lasts (WEB_SESSION_HOURS). */
  webSessionHours: number;
  logLevel: Env['LOG_LEVEL'];
  model: ModelProviderConfig & { scenarioPath?: string };
  sandbox: {
    kind: Env['SANDBOX'];
    network: Env['SANDBOX_NETWORK'];
    ttlMinutes: number;
    limits: SandboxLimits;
    limitMode: Env['SANDBOX_LIMITS'];
    diskQuota: Env['SANDBOX_DISK_QUOTA'];
    usrLocal: boolean;
    /** The host uid and gid commands run as when Patchbay runs as root. */
    user: SandboxUser;
    /** The egress proxy's allowlist and brokered secrets (values read from the environment at start). */
    egress: { allow: EgressRule[]; secrets: SecretRoute[] };
    /** Present with SANDBOX=modal. */
    modal?: ModalConfig;
  };
  worker: {
    concurrency: number;
    maxRunning?: number;
    heartbeatSeconds: number;
    leaseSeconds: number;
    monitorIntervalSeconds: number;
    shutdownGraceMs: number;
    checkpointMaxBytes: number;
  };
  /** Days a finished inbound delivery is kept; unset: forever. */
  deliveryRetentionDays?: number;
  /** Where a process without the API serves its health check (WORKER_HEALTH_PORT). */
  workerHealthPort?: number;
  limits: { maxWallMs: number; maxTokens: number; maxToolCalls: number };
  /** The API accepts a path on the server's disk as a repository (PATCHBAY_ALLOW_LOCAL_REPOS). */
  allowLocalRepos: boolean;
  /** Branches no push may target (PROTECTED_BRANCHES), on top of main, master, the base and the default. */
  protectedBranches: string[];
  gates: {
    maxCostUsd: number;
    maxMinutes: number;
    checkTimeoutMs: number;
    maxCheckRounds: number;
    verifierModel?: string;
  };
  /** OTEL_EXPORTER_OTLP_ENDPOINT: traces of runs are exported there. */
  otlpEndpoint?: string;
  /** Present when SLACK_BOT_TOKEN is set. */
  slack?: SlackConfig;
  github?: GitHubConfig;
  /** Present when LINEAR_WEBHOOK_SECRET (and a token or the OAuth client) is set. */
  linear?: LinearConfig;
};

/**
 * Parses the environment. A bad or missing value fails here, at start, with one line per problem
 * naming the variable, never later in the middle of a run.
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.') || '(environment)'}: ${issue.message}`);
    throw new PatchbayError('config_invalid', `Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.SANDBOX_NETWORK === 'host' && !e.PATCHBAY_API_TOKEN) {
    throw new PatchbayError(
      'config_invalid',
      "SANDBOX_NETWORK=host gives sandboxed commands this host's network, Patchbay's API and database included: set PATCHBAY_API_TOKEN, or use SANDBOX_NETWORK=proxy",
    );
  }
  return {
    port: e.PORT,
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/$/, ''),
    dataDir: resolve(e.DATA_DIR),
    ...(e.DATABASE_URL && { databaseUrl: e.DATABASE_URL }),
    ...(e.OTEL_EXPORTER_OTLP_ENDPOINT && { otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, '') }),
    ...(e.PATCHBAY_API_TOKEN && { apiToken: e.PATCHBAY_API_TOKEN }),
    webSessionHours: e.WEB_SESSION_HOURS,
    logLevel: e.LOG_LEVEL,
    model: { ...modelConfigFromEnv(e), ...(e.SCRIPTED_SCENARIO && { scenarioPath: resolve(e.SCRIPTED_SCENARIO) }) },
    sandbox: {
      kind: e.SANDBOX,
      network: e.SANDBOX_NETWORK,
      ttlMinutes: e.SANDBOX_TTL_MINUTES,
      limits: {
        maxProcs: e.SANDBOX_MAX_PROCS,
        memoryMb: e.SANDBOX_MEMORY_MB,
        cpuSeconds: e.SANDBOX_CPU_SECONDS,
        fileMb: e.SANDBOX_FILE_MB,
        diskMb: e.SANDBOX_DISK_MB,
        tmpMb: e.SANDBOX_TMP_MB,
      },
      limitMode: e.SANDBOX_LIMITS,
      diskQuota: e.SANDBOX_DISK_QUOTA,
      usrLocal: e.SANDBOX_USR_LOCAL === 'true',
      user: { uid: e.SANDBOX_UID, gid: e.SANDBOX_GID ?? e.SANDBOX_UID },
      egress: {
        allow: parseEgressAllow(e.SANDBOX_EGRESS_ALLOW, { githubHost: githubHostEntry(e.GITHUB_GIT_URL) }),
        secrets: parseSandboxSecrets(e.SANDBOX_SECRETS, env),
      },
      ...(e.SANDBOX === 'modal' && { modal: modalConfig(e, env) }),
    },
    ...(e.DELIVERY_RETENTION_DAYS > 0 && { deliveryRetentionDays: e.DELIVERY_RETENTION_DAYS }),
    ...(e.WORKER_HEALTH_PORT !== undefined && { workerHealthPort: e.WORKER_HEALTH_PORT }),
    worker: {
      concurrency: e.WORKER_CONCURRENCY,
      ...(e.MAX_RUNNING_SESSIONS !== undefined && { maxRunning: e.MAX_RUNNING_SESSIONS }),
      heartbeatSeconds: e.QUEUE_HEARTBEAT_SECONDS,
      leaseSeconds: e.RUN_LEASE_SECONDS,
      monitorIntervalSeconds: e.QUEUE_MONITOR_SECONDS,
      shutdownGraceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
      checkpointMaxBytes: e.CHECKPOINT_MAX_MB * 1024 * 1024,
    },
    limits: { maxWallMs: e.RUN_MAX_MINUTES * 60_000, maxTokens: e.RUN_MAX_TOKENS, maxToolCalls: e.RUN_MAX_TOOL_CALLS },
    allowLocalRepos: e.PATCHBAY_ALLOW_LOCAL_REPOS === 'true',
    protectedBranches: e.PROTECTED_BRANCHES.split(',')
      .map((b) => b.trim())
      .filter(Boolean),
    gates: {
      maxCostUsd: e.RUN_MAX_COST_USD,
      maxMinutes: e.RUN_MAX_MINUTES,
      checkTimeoutMs: Math.round(e.CHECK_TIMEOUT_MINUTES * 60_000),
      maxCheckRounds: e.GATE_MAX_CHECK_ROUNDS,
      ...(e.VERIFIER_MODEL && { verifierModel: e.VERIFIER_MODEL }),
    },
    ...withSlack(slackConfigFromEnv(e)),
    ...withGitHub(githubConfigFromEnv(e)),
    ...withLinear(linearConfigFromEnv(e)),
  };
}

function modalConfig(e: Env, env: Record<string, string | undefined>): ModalConfig {
  if (Boolean(e.MODAL_TOKEN_ID) !== Boolean(e.MODAL_TOKEN_SECRET)) {
    throw new PatchbayError(
      'config_invalid',
      'MODAL_TOKEN_ID and MODAL_TOKEN_SECRET go together: set both (from modal.com → Settings → API Tokens), or neither to use ~/.modal.toml',
    );
  }
  // The egress proxy that brokers SANDBOX_SECRETS runs on this host, where a Modal sandbox cannot reach it:
  // the credentials would never be added, and each request would fail in the sandbox for no reason it can see.
  if (e.SANDBOX_SECRETS) {
    throw new PatchbayError(
      'config_invalid',
      'SANDBOX_SECRETS cannot be used with SANDBOX=modal: the proxy that adds those credentials runs on this host, which Modal sandboxes cannot reach; unset SANDBOX_SECRETS, or use SANDBOX=local',
    );
  }
  if (e.MODAL_IDLE_TIMEOUT_MINUTES > e.MODAL_SANDBOX_TIMEOUT_MINUTES) {
    throw new PatchbayError(
      'config_invalid',
      'MODAL_IDLE_TIMEOUT_MINUTES must not exceed MODAL_SANDBOX_TIMEOUT_MINUTES',
    );
  }
  return {
    configFile: env.MODAL_CONFIG_PATH || join(homedir(), '.modal.toml'),
    ...(e.MODAL_TOKEN_ID && { tokenId: e.MODAL_TOKEN_ID }),
    ...(e.MODAL_TOKEN_SECRET && { tokenSecret: e.MODAL_TOKEN_SECRET }),
    appName: e.MODAL_APP_NAME,
    image: e.MODAL_IMAGE ?? DEFAULT_MODAL_IMAGE,
    dockerfileCommands: e.MODAL_IMAGE ? [] : DEFAULT_MODAL_IMAGE_COMMANDS,
    ...(e.MODAL_CPU !== undefined && { cpu: e.MODAL_CPU }),
    ...(e.MODAL_MEMORY_MIB !== undefined && { memoryMiB: e.MODAL_MEMORY_MIB }),
    timeoutMinutes: e.MODAL_SANDBOX_TIMEOUT_MINUTES,
    idleTimeoutMinutes: e.MODAL_IDLE_TIMEOUT_MINUTES,
    snapshotEveryMinutes: e.MODAL_SNAPSHOT_EVERY_MINUTES,
    snapshotTtlDays: e.MODAL_SNAPSHOT_TTL_DAYS,
    exitSnapshots: e.MODAL_EXIT_SNAPSHOTS === 'true',
    ...(e.MODAL_TEMPLATE_REFRESH_MINUTES > 0 && {
      setupImageRefresh: {
        everyMinutes: e.MODAL_TEMPLATE_REFRESH_MINUTES,
        minCommits: e.MODAL_TEMPLATE_REFRESH_COMMITS,
      },
    }),
  };
}

/** The GitHub git host as an allowlist entry: its name, with the port when it is not 80/443. */
function githubHostEntry(gitUrl: string): string {
  const url = new URL(gitUrl);
  return url.port ? `${url.hostname}:${url.port}` : url.hostname;
}

const SandboxSecrets = z.record(
  z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'names are lower-case letters, digits, - and _'),
  z.object({
    url: z.url({ protocol: /^https?$/ }),
    header: z.string().regex(/^[A-Za-z0-9-]+$/, 'must be a header name'),
    env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must name an environment variable'),
    prefix: z.string().optional(),
  }),
);

/** SANDBOX_SECRETS: each entry's header value is read from the host variable it names, here, once. */
function parseSandboxSecrets(text: string | undefined, env: Record<string, string | undefined>): SecretRoute[] {
  if (!text) return [];
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PatchbayError(
      'config_invalid',
      'SANDBOX_SECRETS: must be JSON like {"npm": {"url": "https://npm.example.com/", "header": "Authorization", "env": "NPM_TOKEN", "prefix": "Bearer "}}',
    );
  }
  const parsed = SandboxSecrets.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  SANDBOX_SECRETS.${issue.path.join('.')}: ${issue.message}`);
    throw new PatchbayError('config_invalid', `Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.entries(parsed.data).map(([name, entry]) => {
    const value = env[entry.env];
    if (!value)
      throw new PatchbayError(
        'config_invalid',
        `SANDBOX_SECRETS.${name}: the environment variable ${entry.env} is not set`,
      );
    if (/[\r\n]/.test(value))
      throw new PatchbayError('config_invalid', `SANDBOX_SECRETS.${name}: ${entry.env} holds a line break`);
    return { name, url: entry.url, header: entry.header, value: `${entry.prefix ?? ''}${value}` };
  });
}

function withSlack(slack: SlackConfig | undefined): { slack?: SlackConfig } {
  return slack ? { slack } : {};
}

function withGitHub(github: GitHubConfig | undefined): { github?: GitHubConfig } {
  return github ? { github } : {};
}

function withLinear(linear: LinearConfig | undefined): { linear?: LinearConfig } {
  return linear ? { linear } : {};
}

/**
 * Every secret value in the config (tokens, keys, signing secrets, the database password), for the
 * logger to redact by value. Found by name, so a setting added later is covered when named so.
 */
export function configuredSecrets(config: Config): string[] {
  const found: string[] = [];
  const walk = (value: unknown, key: string): void => {
    if (typeof value === 'string') {
      if (/(token|secret|key|password)$/i.test(key)) found.push(value);
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, k);
    }
  };
  walk(config, '');
  if (config.databaseUrl) {
    try {
      const password = decodeURIComponent(new URL(config.databaseUrl).password);
      if (password) found.push(password);
    } catch {
      // An unparsable URL fails at connect; nothing to add.
    }
  }
  return found;
}
