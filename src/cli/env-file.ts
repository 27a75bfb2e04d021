import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { PatchbayError } from '../core/errors.ts';

/**
 * Settings from an env file, for every command (`serve`, `run`, `doctor`, …): PATCHBAY_ENV_FILE
 * when set (it must exist), else `.env` in the working directory when there is one. A variable
 * already in the environment wins over the file, even when set to empty, so a service manager's or
 * a shell's setting is never overridden. Returns the file read, if any; `env` is updated in place.
 */
export function loadEnvFile(env: Record<string, string | undefined>, cwd: string): string | undefined {
  const named = env.PATCHBAY_ENV_FILE;
  const path = resolve(cwd, named || '.env');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (!named && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PatchbayError('config_invalid', `PATCHBAY_ENV_FILE ${path} cannot be read`, { cause: error });
  }
  for (const [key, value] of Object.entries(parseEnv(text))) {
    if (!(key in env)) env[key] = value;
  }
  return path;
}
