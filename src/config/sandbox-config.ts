import { z } from 'zod';
import { parseEgressAllow, type EgressRule } from '../../sandbox/egress-policy.ts';
import type { SecretRoute } from '../../sandbox/egress-proxy.ts';
import { normalizePrefix } from '../../sandbox/secret-path.ts';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from '../../sandbox/sandbox-limits.ts';
import { DEFAULT_SANDBOX_USER, type SandboxUser } from '../../sandbox/sandbox-user.ts';
import { PatchbayError } from '../core/errors.ts';
import { emptyAsUndefined, optionalString, positiveInt } from './env-values.ts';
import { modalConfigFromEnv, modalEnvShape, type ModalConfig } from './modal-config.ts';

/** The sandbox settings (SANDBOX, its Modal settings, SANDBOX_*), part of the environment schema of src/config.ts. */
export const sandboxEnvShape = {
  SANDBOX: z.preprocess(emptyAsUndefined, z.enum(['local', 'unsafe-local', 'modal']).default('local')),
  ...modalEnvShape,
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
};
const sandboxEnvSchema = z.object(sandboxEnvShape);
type SandboxEnv = z.infer<typeof sandboxEnvSchema>;

/** Where sessions' commands run and what they may reach. */
export type SandboxConfig = {
  kind: SandboxEnv['SANDBOX'];
  network: SandboxEnv['SANDBOX_NETWORK'];
  ttlMinutes: number;
  limits: SandboxLimits;
  limitMode: SandboxEnv['SANDBOX_LIMITS'];
  diskQuota: SandboxEnv['SANDBOX_DISK_QUOTA'];
  usrLocal: boolean;
  /** The host uid and gid commands run as when Patchbay runs as root. */
  user: SandboxUser;
  /** The egress proxy's allowlist and brokered secrets (values read from the environment at start). */
  egress: { allow: EgressRule[]; secrets: SecretRoute[] };
  /** Present with SANDBOX=modal. */
  modal?: ModalConfig;
};

/**
 * The sandbox part of the config. `githubGitUrl` is the GitHub host the default allowlist lets
 * through; `env` is the raw environment, where SANDBOX_SECRETS's values are read.
 */
export function sandboxConfigFromEnv(
  e: SandboxEnv,
  githubGitUrl: string,
  env: Record<string, string | undefined>,
): SandboxConfig {
  return {
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
      allow: parseEgressAllow(e.SANDBOX_EGRESS_ALLOW, { githubHost: githubHostEntry(githubGitUrl) }),
      secrets: parseSandboxSecrets(e.SANDBOX_SECRETS, env),
    },
    ...(e.SANDBOX === 'modal' && { modal: modalConfigFromEnv(e, env) }),
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
    /** The methods the secret is sent with; GET and HEAD (reads) unless named. A write also needs a person's approval. */
    methods: z
      .array(z.enum(['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE']))
      .min(1)
      .optional(),
    /** Path prefixes under `url` the secret is sent to (`/api/npm/`); all of `url` unless named. */
    paths: z
      .array(
        z
          .string()
          .refine(
            (prefix) => normalizePrefix(prefix) === prefix,
            'must start with / and hold no dot segments, doubled slashes, backslashes, ; or %-encoding',
          ),
      )
      .min(1)
      .optional(),
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
    return {
      name,
      url: entry.url,
      header: entry.header,
      value: `${entry.prefix ?? ''}${value}`,
      ...(entry.methods && { methods: entry.methods }),
      ...(entry.paths && { paths: entry.paths }),
    };
  });
}
