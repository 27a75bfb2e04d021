import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Folders of repository contents and run state under DATA_DIR. */
const PRIVATE_FOLDERS = ['workspaces', 'workspace-images', 'mirrors', 'workspace-meta', 'spares', 'tmp'] as const;

/**
 * Closes DATA_DIR to other local users: repository checkouts, mirrors and run state are not theirs
 * to read. DATA_DIR itself is 0700, or 0711 as root: the embedded PostgreSQL then runs as its own
 * user and must search (not list) DATA_DIR to reach its data folder, which it keeps 0700 itself.
 * The folders below are 0700 (the sandbox user reaches its workspace through the stage, see
 * sandbox-user.ts). Idempotent; call at every start.
 */
export async function secureDataDir(dataDir: string, options: { serverUid: number | undefined }): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, options.serverUid === 0 ? 0o711 : 0o700);
  for (const name of PRIVATE_FOLDERS) {
    await mkdir(join(dataDir, name), { recursive: true, mode: 0o700 });
    await chmod(join(dataDir, name), 0o700);
  }
}
