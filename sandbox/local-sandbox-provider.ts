import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { DiskQuota } from './bwrap-launch.ts';
import { createEgressSockets } from './egress-sockets.ts';
import { probeSandboxHost, type LimitEnforcement, type SandboxHost } from './local-sandbox-host.ts';
import { acquireLocalSandbox, type HandleContext } from './local-sandbox.ts';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './sandbox-limits.ts';
import type { SandboxProvider } from './sandbox.ts';
import { makeStageDir, sandboxUserFor, type SandboxIdentity, type SandboxUser } from './sandbox-user.ts';
import { secureDataDir } from './secure-data-dir.ts';
import type { EgressOptions } from './session-egress.ts';
import { createWorkspaceStore } from './workspace-store.ts';

export type LocalSandboxMode = 'bwrap' | 'unsafe-local';

export type LocalSandboxProviderOptions = {
  /** Workspaces go to `<dataDir>/workspaces/<sessionId>`. */
  dataDir: string;
  log: Logger;
  /** Idle workspaces older than this are removed by reap(). */
  ttlMinutes: number;
  /** 'bwrap' isolates every command; 'unsafe-local' runs it on the host (development only). */
  mode: LocalSandboxMode;
  bwrapPath?: string;
  clock?: () => Date;
  /** Resource limits of each command (bwrap mode). */
  limits?: SandboxLimits;
  /** 'auto' uses cgroups where this host lets Patchbay make them, else rlimits; the others insist. */
  limitMode?: 'auto' | 'cgroup' | 'rlimit';
  /** Also bind /usr/local read-only (off: host-installed software stays out). */
  usrLocal?: boolean;
  /** For tests: where cgroups are mounted. */
  cgroupRoot?: string;
  /** Needed for sandboxes with network 'proxy': the allowlist, brokered secrets, and who hears of refusals. */
  egress?: EgressOptions;
  /** When the server runs as root: the host uid and gid commands run as (DEFAULT_SANDBOX_USER if absent). */
  sandboxUser?: SandboxUser;
  /**
   * How SANDBOX_DISK_MB holds (see DiskQuota): 'auto' gives each workspace a file system of its
   * own where this host can (root, loop devices), else watches it; the others insist.
   */
  diskQuota?: 'auto' | DiskQuota['kind'];
  /**
   * Host directories shown read-only at the given path in every command: the engines' CLIs
   * (installed with Patchbay from npm), so an engine runs inside the sandbox without a copy per workspace.
   */
  engineBinds?: readonly { hostPath: string; sandboxPath: string }[];
};

export type LocalSandboxProvider = SandboxProvider & {
  readonly kind: 'local' | 'unsafe-local';
  /** Undefined in unsafe-local mode, which enforces no limits. */
  readonly enforcement: LimitEnforcement | undefined;
  /** The host uid commands run as, when not the server's own (the server is root). */
  readonly sandboxUser: SandboxUser | undefined;
  /** How the disk quota holds; undefined in unsafe-local mode. */
  readonly diskQuota: DiskQuota['kind'] | undefined;
  hostPath(sessionId: string): string;
  /** Unmounts the workspaces' file systems and removes the egress sockets' directory (after every sandbox was released). */
  close(): Promise<void>;
};

/**
 * The local SandboxProvider. In 'bwrap' mode bubblewrap is checked once here, so a host that
 * cannot sandbox fails at startup with an actionable PatchbayError('sandbox_unavailable').
 */
export async function createLocalSandboxProvider(options: LocalSandboxProviderOptions): Promise<LocalSandboxProvider> {
  const log = options.log.child({ component: 'sandbox', mode: options.mode });
  const clock = options.clock ?? (() => new Date());
  const bwrapPath = options.bwrapPath ?? 'bwrap';
  const limits = options.limits ?? DEFAULT_SANDBOX_LIMITS;
  const runAs = options.mode === 'bwrap' ? sandboxUserFor(process.getuid?.(), options.sandboxUser) : undefined;
  await secureDataDir(options.dataDir, { serverUid: process.getuid?.() });
  const identity: SandboxIdentity | undefined = runAs && { user: runAs, stageDir: await makeStageDir(tmpdir()) };
  const host = await prepareHost(options, { bwrapPath, limits, identity }, log);
  const diskQuota = host?.diskQuota;
  const store = createWorkspaceStore({
    dataDir: options.dataDir,
    ttlMinutes: options.ttlMinutes,
    clock,
    log,
    ...(runAs && { owner: runAs }),
    ...(diskQuota === 'filesystem' && {
      images: { dir: path.join(options.dataDir, 'workspace-images'), sizeMb: limits.diskMb },
    }),
  });
  const handles: HandleContext = {
    store,
    command: {
      host,
      bwrapPath,
      limits,
      identity,
      secretNames: (options.egress?.secrets ?? []).map((secret) => secret.name),
      engineBinds: options.engineBinds ?? [],
    },
    runAs,
    diskQuota,
    log,
    egress: options.egress,
    egressSockets: createEgressSockets(tmpdir(), runAs),
  };
  return {
    kind: options.mode === 'bwrap' ? 'local' : 'unsafe-local',
    // Without bubblewrap there is no mount to show the mirror's objects at SHARED_OBJECTS_PATH.
    sharesObjects: options.mode === 'bwrap',
    enforcement: host?.enforcement,
    sandboxUser: runAs,
    diskQuota,
    hostPath: (sessionId) => store.workspacePath(sessionId),
    reap: (now) => store.reap(now ?? clock()),
    async close() {
      await store.detachAll();
      await handles.egressSockets.close();
      // Only empty mount points: every bind on them lived in a command's own mount namespace.
      if (identity) await rm(identity.stageDir, { recursive: true, force: true });
    },
    acquire: (sessionId, spec) => acquireLocalSandbox(handles, sessionId, spec),
  };
}

/** 'bwrap': what this host offers a sandbox, checked once (see probeSandboxHost); 'unsafe-local': nothing, with a warning. */
async function prepareHost(
  options: LocalSandboxProviderOptions,
  resolved: { bwrapPath: string; limits: SandboxLimits; identity: SandboxIdentity | undefined },
  log: Logger,
): Promise<SandboxHost | undefined> {
  if (options.mode !== 'bwrap') {
    log.warn(
      'SANDBOX=unsafe-local: commands run directly on this host without isolation; use only for local development',
    );
    return undefined;
  }
  return probeSandboxHost(
    {
      bwrapPath: resolved.bwrapPath,
      dataDir: options.dataDir,
      limits: resolved.limits,
      limitMode: options.limitMode ?? 'auto',
      diskQuota: options.diskQuota ?? 'auto',
      ...(options.usrLocal !== undefined && { usrLocal: options.usrLocal }),
      ...(options.cgroupRoot !== undefined && { cgroupRoot: options.cgroupRoot }),
      proxied: options.egress !== undefined,
      ...(resolved.identity && { identity: resolved.identity }),
    },
    log,
  );
}
