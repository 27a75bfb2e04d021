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
  const dataDir = path.resolve(options.dataDir);
  const state: Workspaces = {
    ...options,
    workspacesDir: path.join(dataDir, 'workspaces'),
    metaDir: path.join(dataDir, 'workspace-meta'),
    ttlMs: options.ttlMinutes * 60_000,
    inUse: new Map(),
    attached: new Set(),
    // Opening and closing one workspace in turn: a second holder never writes before the mount is up.
    inTurn: oneAtATime(),
  };
  return {
    workspacePath: (sessionId) => workspacePath(state, sessionId),
    open: (sessionId) => openWorkspace(state, sessionId),
    touch: (sessionId) => touchWorkspace(state, sessionId),
    close(sessionId) {
      return state.inTurn(sessionId, async () => {
        release(state, sessionId);
        await touchWorkspace(state, sessionId).catch(() => {});
      });
    },
    async detachAll() {
      for (const sessionId of [...state.attached]) {
        await state.inTurn(sessionId, () => detachWorkspaceImage(workspacePath(state, sessionId)));
        state.attached.delete(sessionId);
      }
    },
    remove: (sessionId) => removeWorkspace(state, sessionId),
    isInUse: (sessionId) => (state.inUse.get(sessionId) ?? 0) > 0,
    reap: (now) => reapIdle(state, now),
  };
}

/** One store's folders and settings, and what it holds in this process. */
type Workspaces = {
  workspacesDir: string;
  metaDir: string;
  ttlMs: number;
  clock: () => Date;
  log: Logger;
  owner?: SandboxUser | undefined;
  images?: { dir: string; sizeMb: number } | undefined;
  /** In-use marks by session: a workspace held by this process is never reaped. */
  inUse: Map<string, number>;
  /** Mounted on first open (again after a restart) and kept so until removed or detachAll. */
  attached: Set<string>;
  inTurn: <T>(key: string, work: () => Promise<T>) => Promise<T>;
};

function workspacePath(state: Workspaces, sessionId: string): string {
  assertSessionId(sessionId);
  return path.join(state.workspacesDir, sessionId);
}

function markerPath(state: Workspaces, sessionId: string): string {
  return path.join(state.metaDir, `${sessionId}.json`);
}

function imagePath(images: { dir: string }, sessionId: string): string {
  return path.join(images.dir, `${sessionId}.ext4`);
}

/** Drops one in-use mark. */
function release(state: Workspaces, sessionId: string): void {
  const count = (state.inUse.get(sessionId) ?? 0) - 1;
  if (count > 0) state.inUse.set(sessionId, count);
  else state.inUse.delete(sessionId);
}

/** Writes the last-used marker: the reaper counts the TTL from now. */
async function touchWorkspace(state: Workspaces, sessionId: string): Promise<void> {
  await mkdir(state.metaDir, { recursive: true });
  await writeFile(markerPath(state, sessionId), JSON.stringify({ lastUsedAt: state.clock().toISOString() }));
}

/** Creates (and mounts) the workspace if missing, owned by the sandbox user and closed to others; marks it in use. */
function openWorkspace(state: Workspaces, sessionId: string): Promise<string> {
  const dir = workspacePath(state, sessionId);
  return state.inTurn(sessionId, async () => {
    state.inUse.set(sessionId, (state.inUse.get(sessionId) ?? 0) + 1);
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      if (state.images) {
        await attachWorkspaceImage(imagePath(state.images, sessionId), dir, state.images.sizeMb);
        state.attached.add(sessionId);
      }
      // The sandbox's uid writes here; other local users neither read nor list it.
      if (state.owner) await chown(dir, state.owner.uid, state.owner.gid);
      await chmod(dir, 0o700);
      await touchWorkspace(state, sessionId);
    } catch (error) {
      release(state, sessionId);
      throw new PatchbayError('sandbox_failed', `could not create workspace ${dir}: ${String(error)}`, {
        cause: error,
      });
    }
    return dir;
  });
}

/** Unmounts and deletes the workspace, its image and its marker. */
function removeWorkspace(state: Workspaces, sessionId: string): Promise<void> {
  return state.inTurn(sessionId, async () => {
    if (state.images) {
      await detachWorkspaceImage(workspacePath(state, sessionId));
      state.attached.delete(sessionId);
      await removeWorkspaceImage(imagePath(state.images, sessionId));
    }
    await rm(workspacePath(state, sessionId), { recursive: true, force: true, maxRetries: 3 });
    await rm(markerPath(state, sessionId), { force: true });
  });
}

/** Removes every workspace not in use here and unused for longer than the TTL; their session ids. */
async function reapIdle(state: Workspaces, now: Date): Promise<string[]> {
  const names = await readdir(state.workspacesDir).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const sessionId of names.sort()) {
    if (!SESSION_ID.test(sessionId) || (state.inUse.get(sessionId) ?? 0) > 0) continue;
    const at = await lastUsedAt(markerPath(state, sessionId), workspacePath(state, sessionId));
    if (at === undefined || now.getTime() - at <= state.ttlMs) continue;
    await removeWorkspace(state, sessionId);
    state.log.info({ sessionId, lastUsedAt: new Date(at).toISOString() }, 'reaped idle workspace');
    removed.push(sessionId);
  }
  return removed;
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
