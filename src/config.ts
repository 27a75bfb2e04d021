import { resolve } from 'node:path';
import { z } from 'zod';
import { PatchbayError } from './core/errors.ts';
import type { ModelProviderConfig } from './models/create-model-provider.ts';
import { modelConfigFromEnv, modelEnvSchema } from './models/model-config.ts';
import { emptyAsUndefined, optionalString, positiveInt } from './config/env-values.ts';
import { sandboxConfigFromEnv, sandboxEnvShape, type SandboxConfig } from './config/sandbox-config.ts';
import { type ApprovalConfig, approvalConfigFromEnv, approvalEnvShape } from './config/approval-config.ts';
import { type EngineConfig, engineConfigFromEnv, engineEnvShape } from './config/engine-config.ts';
import { DEFAULT_SUBTASKS_MAX } from './core/subtasks.ts';
import { slackConfigFromEnv, slackEnvSchema, type SlackConfig } from '../integrations/slack/slack-env.ts';
import { githubConfigFromEnv, githubEnvSchema, type GitHubConfig } from '../integrations/github/github-env.ts';
import { linearConfigFromEnv, linearEnvSchema, type LinearConfig } from '../integrations/linear/linear-env.ts';

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
    /** Signs artifact links (screenshots in PR bodies); unset: generated once and kept in DATA_DIR. */
    ARTIFACT_URL_SECRET: z.preprocess(
      emptyAsUndefined,
      z.string().min(32, 'must be at least 32 characters').optional(),
    ),
    /** For MODEL_PROVIDER=scripted: a JSON file with {"turns": [...]}. */
    SCRIPTED_SCENARIO: optionalString,
    ...sandboxEnvShape,
    ...approvalEnvShape,
    ...engineEnvShape,
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
    /** Largest picture taken in from a conversation, in bytes, before it is scaled down. */
    IMAGE_MAX_BYTES: positiveInt(10 * 1024 * 1024),
    /** Most pictures taken in from one message; the rest are refused with a note. */
    IMAGE_MAX_PER_MESSAGE: positiveInt(5),
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
    /** Most sub-tasks one spawn_subtasks call may start. */
    SUBTASKS_MAX: positiveInt(DEFAULT_SUBTASKS_MAX),
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

export type Config = {
  port: number;
  publicUrl: string;
  dataDir: string;
  databaseUrl?: string;
  apiToken?: string;
  /** ARTIFACT_URL_SECRET; unset: the one generated in DATA_DIR (see src/start/artifact-secret.ts). */
  artifactUrlSecret?: string;
  /** How long a web page sign-in lasts (WEB_SESSION_HOURS). */
  webSessionHours: number;
  logLevel: Env['LOG_LEVEL'];
  model: ModelProviderConfig & { scenarioPath?: string };
  sandbox: SandboxConfig;
  /** AGENT_ENGINE and what the engines and their relay need (docs/engines.md). */
  engines: EngineConfig;
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
  /** Most sub-tasks one spawn_subtasks call may start (SUBTASKS_MAX). */
  subtasksMax: number;
  /** Caps on pictures from conversations (IMAGE_MAX_BYTES, IMAGE_MAX_PER_MESSAGE). */
  images: { maxBytes: number; maxPerMessage: number };
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
  /** AUTONOMY (or APPROVALS=off), APPROVAL_RULES and APPROVAL_TIMEOUT_MINUTES: what waits for a person. */
  approvals: ApprovalConfig;
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
    ...(e.ARTIFACT_URL_SECRET && { artifactUrlSecret: e.ARTIFACT_URL_SECRET }),
    webSessionHours: e.WEB_SESSION_HOURS,
    logLevel: e.LOG_LEVEL,
    model: { ...modelConfigFromEnv(e), ...(e.SCRIPTED_SCENARIO && { scenarioPath: resolve(e.SCRIPTED_SCENARIO) }) },
    sandbox: sandboxConfigFromEnv(e, e.GITHUB_GIT_URL, env),
    engines: engineConfigFromEnv(e),
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
    subtasksMax: e.SUBTASKS_MAX,
    images: { maxBytes: e.IMAGE_MAX_BYTES, maxPerMessage: e.IMAGE_MAX_PER_MESSAGE },
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
    approvals: approvalConfigFromEnv(e),
    ...withSlack(slackConfigFromEnv(e)),
    ...withGitHub(githubConfigFromEnv(e)),
    ...withLinear(linearConfigFromEnv(e)),
  };
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
