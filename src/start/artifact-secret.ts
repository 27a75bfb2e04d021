import { randomBytes } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createArtifactLinks, type ArtifactLinks } from '../api/artifact-links.ts';
import type { Config } from '../config.ts';
import { PatchbayError } from '../core/errors.ts';

/** Where the generated artifact link secret lives when ARTIFACT_URL_SECRET is unset: 0600, under DATA_DIR. */
export function artifactSecretPath(dataDir: string): string {
  return join(dataDir, 'artifact-url-secret');
}

/**
 * The artifact links of this server: signed with ARTIFACT_URL_SECRET, or with a random secret
 * made once and kept in DATA_DIR (so links in PR bodies outlive restarts). Processes on different
 * hosts (API and workers apart) must share ARTIFACT_URL_SECRET.
 */
export async function loadArtifactLinks(
  config: Pick<Config, 'artifactUrlSecret' | 'dataDir' | 'publicUrl'>,
): Promise<ArtifactLinks> {
  const secret = config.artifactUrlSecret ?? (await loadOrCreateSecret(artifactSecretPath(config.dataDir)));
  return createArtifactLinks({ secret, publicUrl: config.publicUrl });
}

async function loadOrCreateSecret(file: string): Promise<string> {
  const existing = await readSecret(file);
  if (existing !== undefined) return existing;
  try {
    await writeFile(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // Another part of this process (or another process on this DATA_DIR) wrote it first.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const made = await readSecret(file);
  if (made === undefined) throw new PatchbayError('config_invalid', `${file} could not be read back`);
  return made;
}

async function readSecret(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (!/^[0-9a-f]{64}$/.test(text))
    throw new PatchbayError(
      'config_invalid',
      `${file} is not an artifact link secret: remove it (old artifact links stop working) or set ARTIFACT_URL_SECRET`,
    );
  // Tighten a file someone loosened by hand.
  await chmod(file, 0o600);
  return text;
}
