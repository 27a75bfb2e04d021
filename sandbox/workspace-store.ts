import { chmod, chown, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { PatchbayError } from '../src/core/errors.ts';
import type { SandboxUser } from './sandbox-user.ts';
import { attachWorkspaceImage, detachWorkspaceImage, removeWorkspaceImage } from './workspace-image.ts';

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** Session ids become directory names, so only a safe alphabet is accepted (no `.`, no `/`). */
export function assertSessionId(sessionId: string): void {
  if (!SESSION_ID.test(sessionId)) {
    throw new PatchbayError(
      'invalid_input',
      `invalid session id ${JSON.stringify(sessionId)}: use 1-128 letters, digits, '-' or '_'`,
    );
  }
}

export type WorkspaceStore = {
  /** `<dataDir>/workspaces/<sessionId>`. */
  workspacePath(sessionId: string): string;
  /** Creates the workspace if missing, marks it in use and used now. */
  open(sessionId: string): Promise<string>;
  /** Records a use (exec) so the reaper counts the TTL from now. */
  touch(sessionId: string): Promise<void>;
  /** Drops one in-use mark; the workspace stays until its TTL. */
  close(sessionId: string): Promise<void>;
  remove(sessionId: string): Promise<void>;
  isInUse(sessionId: string): boolean;
  /**
   * Unmounts every workspace file system this store mounted (at shutdown); each is mounted again
   * when next opened. Call after every sandbox was released.
   */
  detachAll(): Promise<void>;
  reap(now: Date): Promise<string[]>;
};

/**
 * Workspaces live under `<dataDir>/workspaces/<sessionId>`; each has a last-used marker at
 * `<dataDir>/workspace-meta/<sessionId>.json`, outside the tree the command can write, so a
 * sandboxed command cannot keep its workspace alive or get it reaped early.
 * In-use marks are per process: a workspace held by this provider is never reaped.
 */
export function createWorkspaceStore(options: {
  dataDir: string;
  ttlMinutes: number;
  clock: () => Date;
  log: Logger;
  /** Owner of each new workspace (the sandbox user, when the server is root). */
  owner?: SandboxUser;
  /**
   * Each workspace its own file system of `sizeMb` (see workspace-image.ts), its image in `dir`:
   * mounted when opened (so the host's git work between runs sees it too), unmounted when removed
   * (reaped, destroyed) or at detachAll. One left mounted by a server that crashed is used as it is.
   */
  images?: { dir: string; sizeMb: number };
}): WorkspaceStore {
  const workspacesDir = path.join(path.resolve(options.dataDir), 'workspaces');
  const metaDir = path.join(path.resolve(options.dataDir), 'workspace-meta');
  const inUse = new Map<string, number>();
  const ttlMs = options.ttlMinutes * 60_000;
  const { images } = options;
  // Opening and closing one workspace in turn: a second holder never writes before the mount is up.
  const inTurn = oneAtATime();

  const workspacePath = (sessionId: string): string => {
    assertSessionId(sessionId);
    return path.join(workspacesDir, sessionId);
  };
  const markerPath = (sessionId: string): string => path.join(metaDir, `${sessionId}.json`);
  const release = (sessionId: string): void => {
    const count = (inUse.get(sessionId) ?? 0) - 1;
    if (count > 0) inUse.set(sessionId, count);
    else inUse.delete(sessionId);
  };
  const touch = async (sessionId: string): Promise<void> => {
    await mkdir(metaDir, { recursive: true });
    await writeFile(markerPath(sessionId), JSON.stringify({ lastUsedAt: options.clock().toISOString() }));
  };
  const remove = (sessionId: string): Promise<void> =>
    inTurn(sessionId, async () => {
      if (images) {
        await detachWorkspaceImage(workspacePath(sessionId));
        attached.delete(sessionId);
        await removeWorkspaceImage(path.join(images.dir, `${sessionId}.ext4`));
      }
      await rm(workspacePath(sessionId), { recursive: true, force: true, maxRetries: 3 });
      await rm(markerPath(sessionId), { force: true });
    });
  // Mounted on first open (again after a restart) and kept so until removed or detachAll.
  const attached = new Set<string>();
  const attach = async (sessionId: string, dir: string): Promise<void> => {
    if (!images) return;
    await attachWorkspaceImage(path.join(images.dir, `${sessionId}.ext4`), dir, images.sizeMb);
    attached.add(sessionId);
  };

  return {
    workspacePath,
    open(sessionId) {
      const dir = workspacePath(sessionId);
      return inTurn(sessionId, async () => {
        inUse.set(sessionId, (inUse.get(sessionId) ?? 0) + 1);
        try {
          await mkdir(dir, { recursive: true, mode: 0o700 });
          await attach(sessionId, dir);
          // The sandbox's uid writes here; other local users neither read nor list it.
          if (options.owner) await chown(dir, options.owner.uid, options.owner.gid);
          await chmod(dir, 0o700);
          await touch(sessionId);
        } catch (error) {
          release(sessionId);
          throw new PatchbayError('sandbox_failed', `could not create workspace ${dir}: ${String(error)}`, {
            cause: error,
          });
        }
        return dir;
      });
    },
    touch,
    close(sessionId) {
      return inTurn(sessionId, async () => {
        release(sessionId);
        await touch(sessionId).catch(() => {});
      });
    },
    async detachAll() {
      for (const sessionId of [...attached]) {
        await inTurn(sessionId, () => detachWorkspaceImage(workspacePath(sessionId)));
        attached.delete(sessionId);
      }
    },
    remove,
    isInUse: (sessionId) => (inUse.get(sessionId) ?? 0) > 0,
    async reap(now) {
      const names = await readdir(workspacesDir).catch(() => [] as string[]);
      const removed: string[] = [];
      for (const sessionId of names.sort()) {
        if (!SESSION_ID.test(sessionId) || (inUse.get(sessionId) ?? 0) > 0) continue;
        const at = await lastUsedAt(markerPath(sessionId), workspacePath(sessionId));
        if (at === undefined || now.getTime() - at <= ttlMs) continue;
        await remove(sessionId);
        options.log.info({ sessionId, lastUsedAt: new Date(at).toISOString() }, 'reaped idle workspace');
        removed.push(sessionId);
      }
      return removed;
    },
  };
}

/** When a workspace was last used: its marker's time, or (no or unreadable marker) its directory's. */
async function lastUsedAt(marker: string, dir: string): Promise<number | undefined> {
  try {
    const parsed: unknown = JSON.parse(await readFile(marker, 'utf8'));
    const at =
      typeof parsed === 'object' && parsed !== null ? (parsed as { lastUsedAt?: unknown }).lastUsedAt : undefined;
    const ms = typeof at === 'string' ? Date.parse(at) : Number.NaN;
    if (!Number.isNaN(ms)) return ms;
  } catch {
    // No or unreadable marker: fall back to the directory's own time below.
  }
  return (await stat(dir).catch(() => undefined))?.mtimeMs;
}

/** Runs the work given for one key one after another, in the order given (other keys run alongside). */
function oneAtATime(): <T>(key: string, work: () => Promise<T>) => Promise<T> {
  const turns = new Map<string, Promise<unknown>>();
  return (key, work) => {
    const next = (turns.get(key) ?? Promise.resolve()).then(work, work);
    const settled = next.catch(() => {});
    turns.set(key, settled);
    void settled.then(() => turns.get(key) === settled && turns.delete(key));
    return next;
  };
}
