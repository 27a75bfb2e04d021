import type { Logger } from 'pino';
import { PatchbayError } from '../src/core/errors.ts';
import type { DiskQuota } from './bwrap-launch.ts';
import type { EgressSockets } from './egress-sockets.ts';
import { runCommand, SANDBOX_WORKDIR, type CommandContext } from './local-sandbox-command.ts';
import type { ExecOptions, ExecResult, FileEntry, Sandbox, SandboxSpec } from './sandbox.ts';
import { handOverTree, type SandboxUser } from './sandbox-user.ts';
import { openSessionEgress, type EgressOptions, type SessionEgress } from './session-egress.ts';
import { createWorkspaceFiles, type WorkspaceFiles } from './workspace-files.ts';
import type { WorkspaceStore } from './workspace-store.ts';

/** What the local provider's sandbox handles share. */
export type HandleContext = {
  store: WorkspaceStore;
  command: CommandContext;
  /** The sandbox user, when the server is root. */
  runAs: SandboxUser | undefined;
  /** Undefined in unsafe-local mode. */
  diskQuota: DiskQuota['kind'] | undefined;
  log: Logger;
  egress: EgressOptions | undefined;
  egressSockets: EgressSockets;
};

/**
 * Opens the session's workspace and, for network 'proxy' under bubblewrap, its own egress proxy,
 * and returns the handle; the workspace is let go again when the proxy cannot start.
 */
export async function acquireLocalSandbox(ctx: HandleContext, sessionId: string, spec: SandboxSpec): Promise<Sandbox> {
  const root = await ctx.store.open(sessionId);
  const sessionLog = ctx.log.child({ sessionId });
  let egress: SessionEgress | undefined;
  try {
    egress =
      spec.network === 'proxy' && ctx.command.host
        ? await openSessionEgress(ctx.egress, ctx.egressSockets, sessionId, sessionLog)
        : undefined;
  } catch (error) {
    await ctx.store.close(sessionId);
    throw error;
  }
  sessionLog.debug({ root, network: spec.network }, 'sandbox acquired');
  return new LocalSandbox(ctx, { sessionId, root, spec, egress, log: sessionLog });
}

/** One handle on a session's workspace; every call after release or destroy fails. */
class LocalSandbox implements Sandbox {
  readonly sessionId: string;
  readonly workdir = SANDBOX_WORKDIR;
  readonly #ctx: HandleContext;
  readonly #root: string;
  readonly #spec: SandboxSpec;
  readonly #egress: SessionEgress | undefined;
  readonly #log: Logger;
  readonly #files: WorkspaceFiles;
  /** Watched: measured before this handle's first command, then after each (see runInBwrap). */
  readonly #disk: DiskQuota;
  /** What the host put in the workspace before the first command (the clone) becomes the sandbox user's. */
  #handedOver: boolean;
  #state: 'open' | 'released' | 'destroyed' = 'open';

  constructor(
    ctx: HandleContext,
    opened: { sessionId: string; root: string; spec: SandboxSpec; egress: SessionEgress | undefined; log: Logger },
  ) {
    this.sessionId = opened.sessionId;
    this.#ctx = ctx;
    this.#root = opened.root;
    this.#spec = opened.spec;
    this.#egress = opened.egress;
    this.#log = opened.log;
    this.#files = createWorkspaceFiles(opened.root, SANDBOX_WORKDIR, ctx.runAs);
    this.#disk = ctx.diskQuota === 'filesystem' ? { kind: 'filesystem' } : { kind: 'watch', usedBytes: undefined };
    this.#handedOver = !ctx.runAs;
  }

  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    this.#assertOpen();
    const { store, runAs } = this.#ctx;
    const { rel } = await this.#files.resolveDir(opts.cwd ?? '.');
    await store.touch(this.sessionId);
    if (!this.#handedOver && runAs) {
      await handOverTree(this.#root, runAs, opts.signal);
      this.#handedOver = true;
    }
    // A command a person approved as publishing may use the secrets bound to a writing method while it runs.
    const releaseWrites = opts.secretWrites ? this.#egress?.proxy.grantWrites() : undefined;
    try {
      const target = {
        root: this.#root,
        cwdRel: rel,
        spec: this.#spec,
        egressSocket: this.#egress?.socket,
        disk: this.#disk,
      };
      return await runCommand(this.#ctx.command, target, command, opts);
    } finally {
      releaseWrites?.();
      await store.touch(this.sessionId).catch(() => {});
    }
  }

  async readFile(p: string): Promise<string> {
    this.#assertOpen();
    return this.#files.readFile(p);
  }

  async writeFile(p: string, content: string): Promise<void> {
    this.#assertOpen();
    return this.#files.writeFile(p, content);
  }

  async listFiles(p: string, listOptions?: { recursive?: boolean; limit?: number }): Promise<FileEntry[]> {
    this.#assertOpen();
    return this.#files.listFiles(p, listOptions);
  }

  async release(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'released';
    await this.#egress?.proxy.close();
    await this.#ctx.store.close(this.sessionId);
    this.#log.debug('sandbox released');
  }

  async destroy(): Promise<void> {
    if (this.#state === 'destroyed') return;
    if (this.#state === 'open') {
      await this.#egress?.proxy.close();
      await this.#ctx.store.close(this.sessionId);
    }
    this.#state = 'destroyed';
    await this.#ctx.store.remove(this.sessionId);
    this.#log.debug('sandbox destroyed');
  }

  #assertOpen(): void {
    if (this.#state !== 'open')
      throw new PatchbayError('sandbox_failed', `sandbox for session ${this.sessionId} was ${this.#state}`);
  }
}
