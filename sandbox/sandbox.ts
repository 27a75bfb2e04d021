import { PatchbayError } from '../src/core/errors.ts';

/**
 * The sandbox port. Tools act only through a Sandbox; the model never touches the host.
 * A sandbox gets no host environment variables and no credentials.
 */
export type ExecOptions = {
  /** Working directory, relative to the workspace root or under `workdir` (default: the root); may not leave it. */
  cwd?: string;
  /** The only environment variables the command sees, on top of a minimal PATH/HOME/LANG. */
  env?: Record<string, string>;
  /** Kills the whole process tree after this long and reports `timedOut` (local default: 10 minutes). */
  timeoutMs?: number;
  /** Aborting kills the whole process tree and reports `aborted`. */
  signal?: AbortSignal;
  /** Bytes of stdout and of stderr kept; the rest is dropped and counted. Default 1 MiB each. */
  maxOutputBytes?: number;
  /** Written to the command's stdin, then closed. */
  stdin?: string;
  /**
   * A person approved this command as publishing (or an operator's rule always allows it): while it
   * runs, brokered secrets bound to a writing method may be sent with it (SANDBOX_SECRETS `methods`).
   * Secrets are local sandboxes' only; elsewhere this changes nothing.
   */
  secretWrites?: boolean;
  /** Called with each chunk of stdout as it arrives (an engine's event stream). Must not throw. */
  onStdout?: (chunk: Uint8Array) => void;
};

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Refuses an `ExecOptions.env` whose names are not shell names or whose values hold a NUL. */
export function assertCommandEnv(env: Record<string, string> = {}): void {
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name) || value.includes('\0'))
      throw new PatchbayError('invalid_input', `invalid environment variable ${JSON.stringify(name)}`);
  }
}

export type ExecResult = {
  /** Null when the command was killed (timeout, abort). */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** Bytes dropped beyond maxOutputBytes, per stream. */
  truncatedBytes: { stdout: number; stderr: number };
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
  /** Set when a sandbox resource limit ended the command or made it fail; `message` is for the model. */
  limit?: { kind: 'processes' | 'memory' | 'cpu' | 'file-size' | 'disk'; message: string };
};

export type FileEntry = { path: string; type: 'file' | 'dir' | 'symlink'; size: number };

export interface Sandbox {
  readonly sessionId: string;
  /** Absolute path of the workspace as seen inside the sandbox (for example /workspace). */
  readonly workdir: string;
  /** Runs `command` with `sh -c` inside the sandbox. Never throws for a non-zero exit. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Paths are relative to the workspace; a path that leaves it is refused (PatchbayError 'path_refused'). */
  readFile(path: string): Promise<string>;
  writeFile(path: string, content: string): Promise<void>;
  /**
   * Entries under `path`, with paths relative to the workspace root, sorted. Symlinks are listed,
   * never followed; `.git` is listed but not descended into. `limit` caps the count (local default 1000).
   */
  listFiles(path: string, options?: { recursive?: boolean; limit?: number }): Promise<FileEntry[]>;
  /** Lets go of the sandbox; the workspace stays for follow-ups until its TTL. Later calls on this handle fail. */
  release(): Promise<void>;
  /** Removes the workspace now. */
  destroy(): Promise<void>;
  /**
   * Remote sandboxes (no `hostPath`): bytes in and out at absolute paths inside the sandbox, for
   * the harness's git bundles. The sandbox's content is data to the host, never a path it opens.
   */
  putBytes?(path: string, data: Uint8Array): Promise<void>;
  getBytes?(path: string, maxBytes: number): Promise<Uint8Array>;
  /** Set once the sandbox is gone for good (a remote sandbox died): the run ends with this reason. */
  failure?(): Error | undefined;
  /**
   * Remote sandboxes: save the filesystem now, so a later run on any worker continues from here.
   * With `template`, the saved image also becomes where new sessions of that repository start
   * (call it only while the workspace is the repository at `commit` plus setup output).
   */
  checkpoint?(options?: { template?: { repo: string; commit: string } }): Promise<void>;
  /**
   * Set when this run's workspace was restored from a snapshot older than the last run's work
   * (its sandbox was lost): what the agent should be told before it goes on.
   */
  readonly restoredNote?: string;
}

export type SandboxSpec = {
  /**
   * Network inside the sandbox: 'proxy' (its own namespace; out only through the host's egress
   * proxy and its allowlist), 'none', or 'host' (the host's own network: no isolation).
   */
  network: 'proxy' | 'none' | 'host';
  /**
   * Host path of a git object directory (the repository's mirror) shown read-only inside at
   * SHARED_OBJECTS_PATH, so a workspace cloned with `--shared` reads its history there instead of
   * holding a copy. Only for providers with `sharesObjects`.
   */
  sharedObjects?: string;
  /** Remote sandboxes: a new session's sandbox starts from this repository's setup image, if any. */
  repo?: string;
  /**
   * The lease epoch of the run acquiring the sandbox. A provider that records sandboxes in the
   * database (Modal) writes those records under it: a run that was taken over gets no sandbox and
   * cannot record or release one.
   */
  epoch?: number;
};

/** Where SandboxSpec.sharedObjects appears inside the sandbox (the workspace's git alternates point here). */
export const SHARED_OBJECTS_PATH = '/patchbay/objects';

export interface SandboxProvider {
  readonly kind: string;
  /** Honours SandboxSpec.sharedObjects: workspaces may borrow the mirror's objects (local bubblewrap). */
  readonly sharesObjects?: boolean;
  /** Creates the session's workspace, or resumes it when it exists. */
  acquire(sessionId: string, spec: SandboxSpec): Promise<Sandbox>;
  /**
   * Host path of the session's workspace, for the harness's own git work (clone, fetch back).
   * Undefined for remote sandboxes.
   */
  hostPath?(sessionId: string): string;
  /** Removes workspaces unused for longer than the TTL; returns the session ids removed. */
  reap(now?: Date): Promise<string[]>;
}
