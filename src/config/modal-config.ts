import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { ModalSettings } from '../../sandbox/modal/modal-sandbox-provider.ts';
import { PatchbayError } from '../core/errors.ts';
import { emptyAsUndefined, optionalString } from './env-values.ts';

/** The settings of Modal sandboxes (SANDBOX=modal), part of the environment schema of src/config.ts. */
export const modalEnvShape = {
  // The SDK itself reads MODAL_SERVER_URL and ~/.modal.toml.
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
};
const modalEnvSchema = z.object(modalEnvShape);
type ModalEnv = z.infer<typeof modalEnvSchema> & { SANDBOX_SECRETS?: string | undefined };

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

/** The Modal settings of a SANDBOX=modal config; `env` is the raw environment, for MODAL_CONFIG_PATH. */
export function modalConfigFromEnv(e: ModalEnv, env: Record<string, string | undefined>): ModalConfig {
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
