import { randomBytes } from 'node:crypto';
import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { PatchbayError } from '../src/core/errors.ts';

/** The superuser the embedded cluster was initialised with; used for setup only. */
export const EMBEDDED_SUPERUSER = 'postgres';
/** The role Patchbay itself connects as: no superuser, owns only its database. */
export const EMBEDDED_APP_ROLE = 'patchbay';
export const EMBEDDED_APP_DATABASE = 'patchbay';
/** The fixed superuser password of embedded clusters made before passwords were random. */
export const LEGACY_SUPERUSER_PASSWORD = 'patchbay';

const credentialsSchema = z.object({
  superuserPassword: z.string().regex(/^[0-9a-f]{32,}$/),
  appPassword: z.string().regex(/^[0-9a-f]{32,}$/),
});
export type EmbeddedCredentials = z.infer<typeof credentialsSchema>;

/** Where the embedded cluster's passwords live: a 0600 JSON file directly under DATA_DIR. */
export function credentialsPath(dataDir: string): string {
  return join(dataDir, 'postgres-credentials.json');
}

/**
 * Reads the cluster's passwords, or makes random ones and writes them (mode 0600, atomically)
 * before any server is told about them, so a crash half-way leaves a file the next start can finish.
 */
export async function loadOrCreateCredentials(
  dataDir: string,
): Promise<{ credentials: EmbeddedCredentials; created: boolean }> {
  const file = credentialsPath(dataDir);
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text !== undefined) {
    const parsed = credentialsSchema.safeParse(safeJson(text));
    if (!parsed.success)
      throw new PatchbayError(
        'config_invalid',
        `${file} is not a Patchbay credentials file: remove it only if the embedded database is new`,
      );
    // Tighten a file someone loosened by hand.
    await chmod(file, 0o600);
    return { credentials: parsed.data, created: false };
  }
  const credentials = {
    superuserPassword: randomBytes(24).toString('hex'),
    appPassword: randomBytes(24).toString('hex'),
  };
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  await rename(temp, file);
  return { credentials, created: true };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
