import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { PatchbayError } from '../src/core/errors.ts';
import { STANDARD_PATH, USR_PATHS, type HostSystemEntry } from './bwrap-args.ts';
import { runInBwrap, type DiskQuota } from './bwrap-launch.ts';
import { checkBubblewrap } from './check-bubblewrap.ts';
import { probeCgroups, type CgroupLayout } from './cgroup-limits.ts';
import type { EgressPolicy } from './egress-policy.ts';
import {
  startEgressProxy,
  type EgressBlock,
  type EgressProxy,
  type Resolve,
  type SecretRoute,
} from './egress-proxy.ts';
import { createEgressSockets } from './egress-sockets.ts';
import { checkSocat, proxyEnv, RELAY_HOST, RELAY_PORT, withEgressRelay } from './egress-relay.ts';
import { probeHostSystem } from './probe-host-system.ts';
import { runProcess } from './run-process.ts';
import { buildSeccompFilter, seccompArchFor } from './seccomp-filter.ts';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './sandbox-limits.ts';
import type { ExecOptions, ExecResult, Sandbox, SandboxProvider, SandboxSpec } from './sandbox.ts';
import { assertCommandEnv, SHARED_OBJECTS_PATH } from './sandbox.ts';
import { handOverTree, makeStageDir, sandboxUserFor, type SandboxIdentity, type SandboxUser } from './sandbox-user.ts';
import { secureDataDir } from './secure-data-dir.ts';
import { createWorkspaceFiles } from './workspace-files.ts';
import { probeWorkspaceImages } from './workspace-image.ts';
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
};

export type EgressOptions = {
  policy: EgressPolicy;
  secrets?: readonly SecretRoute[];
  /** Each refused host, once per sandbox handle. Must not throw. */
  onBlocked?: (sessionId: string, block: EgressBlock) => void;
  /** Host-side DNS (tests pin names to addresses). */
  resolve?: Resolve;
};

/** How limits are enforced on this host, as probed at start. */
export type LimitEnforcement = 'cgroup v2' | 'cgroup v1' | 'rlimit';

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

export const SANDBOX_WORKDIR = '/workspace';
export const DEFAULT_EXEC_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const SANDBOX_HOME = '/tmp/home';

/**
 * The local SandboxProvider. In 'bwrap' mode bubblewrap is checked once here, so a host that
 * cannot sandbox fails at startup with an actionable PatchbayError('sandbox_unavailable').
 */
export async function createLocalSandboxProvider(options: LocalSandboxProviderOptions): Promise<LocalSandboxProvider> {
  const log = options.log.child({ component: 'sandbox', mode: options.mode });
  const clock = options.clock ?? (() => new Date());
  const bwrapPath = options.bwrapPath ?? 'bwrap';
  const limits = options.limits ?? DEFAULT_SANDBOX_LIMITS;
  let hostSystem: HostSystemEntry[] = [];
  let usr: HostSystemEntry[] = [];
  let cgroups: CgroupLayout | undefined;
  let seccomp: Buffer | undefined;
  let enforcement: LimitEnforcement | undefined;
  let diskQuota: DiskQuota['kind'] | undefined;
  const runAs = options.mode === 'bwrap' ? sandboxUserFor(process.getuid?.(), options.sandboxUser) : undefined;
  await secureDataDir(options.dataDir, { serverUid: process.getuid?.() });
  const identity: SandboxIdentity | undefined = runAs && { user: runAs, stageDir: await makeStageDir(tmpdir()) };
  if (options.mode === 'bwrap') {
    hostSystem = await probeHostSystem();
    usr = await probeHostSystem(options.usrLocal ? [...USR_PATHS, '/usr/local'] : USR_PATHS);
    const arch = seccompArchFor(process.arch);
    if (arch) seccomp = buildSeccompFilter(arch);
    else log.warn({ arch: process.arch }, 'no seccomp filter for this architecture: sandbox commands run without one');
    ({ cgroups, enforcement } = await chooseEnforcement(options.limitMode ?? 'auto', log, options.cgroupRoot));
    await checkBubblewrap(bwrapPath, { hostSystem, usr, limits, seccomp, cgroups, ...(identity && { identity }) });
    diskQuota = await chooseDiskQuota(options.diskQuota ?? 'auto', options.dataDir, log);
    log.info(
      { enforcement, diskQuota, limits, sandboxUid: runAs?.uid ?? process.getuid?.() },
      `sandbox limits enforced with ${enforcement}`,
    );
    if (options.egress) checkSocat(STANDARD_PATH);
  } else {
    log.warn(
      'SANDBOX=unsafe-local: commands run directly on this host without isolation; use only for local development',
    );
  }
  const images =
    diskQuota === 'filesystem'
      ? { images: { dir: path.join(options.dataDir, 'workspace-images'), sizeMb: limits.diskMb } }
      : {};
  const store = createWorkspaceStore({
    dataDir: options.dataDir,
    ttlMinutes: options.ttlMinutes,
    clock,
    log,
    ...(runAs && { owner: runAs }),
    ...images,
  });
  const egressSockets = createEgressSockets(tmpdir(), runAs);
  const openEgress = async (
    sessionId: string,
    sessionLog: Logger,
  ): Promise<{ proxy: EgressProxy; socket: string } | undefined> => {
    if (options.mode !== 'bwrap') return undefined;
    const egress = options.egress;
    if (!egress)
      throw new PatchbayError(
        'sandbox_unavailable',
        "network 'proxy' needs the egress options (allowlist) on the sandbox provider",
      );
    const socket = await egressSockets.next();
    const proxy = await startSessionProxy(socket, egress, sessionId, sessionLog);
    await egressSockets.grant(socket);
    return { proxy, socket };
  };
  const secretNames = (options.egress?.secrets ?? []).map((secret) => secret.name);

  const runCommand = async (
    root: string,
    cwdRel: string,
    spec: SandboxSpec,
    egressSocket: string | undefined,
    disk: DiskQuota,
    command: string,
    opts: ExecOptions,
  ): Promise<ExecResult> => {
    const base = {
      timeoutMs: opts.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
      maxOutputBytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    };
    if (options.mode === 'bwrap') {
      const proxied = spec.network === 'proxy';
      const env = commandEnv(SANDBOX_HOME, proxied ? { ...opts.env, ...proxyEnv(secretNames) } : opts.env);
      const cwd = cwdRel === '.' ? SANDBOX_WORKDIR : `${SANDBOX_WORKDIR}/${cwdRel}`;
      return runInBwrap({
        bwrapPath,
        workspaceHostPath: root,
        workdir: SANDBOX_WORKDIR,
        cwd,
        network: spec.network,
        ...(egressSocket && { egressSocket }),
        ...(spec.sharedObjects && {
          readOnlyBinds: [{ hostPath: spec.sharedObjects, sandboxPath: SHARED_OBJECTS_PATH }],
        }),
        env,
        hostSystem,
        usr,
        home: SANDBOX_HOME,
        limits,
        seccomp,
        cgroups,
        ...(identity && { identity }),
        disk,
        command: proxied ? withEgressRelay(command) : command,
        ...base,
      });
    }
    // Unsafe mode still hides the host environment and gives each command a throwaway home.
    const home = await mkdtemp(path.join(tmpdir(), 'patchbay-home-'));
    try {
      const cwd = path.join(root, cwdRel);
      return await runProcess({
        file: '/bin/sh',
        args: ['-c', command],
        cwd,
        env: commandEnv(home, opts.env),
        ...base,
      });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  };

  return {
    kind: options.mode === 'bwrap' ? 'local' : 'unsafe-local',
    // Without bubblewrap there is no mount to show the mirror's objects at SHARED_OBJECTS_PATH.
    sharesObjects: options.mode === 'bwrap',
    enforcement,
    sandboxUser: runAs,
    diskQuota,
    hostPath: (sessionId) => store.workspacePath(sessionId),
    reap: (now) => store.reap(now ?? clock()),
    async close() {
      await store.detachAll();
      await egressSockets.close();
      // Only empty mount points: every bind on them lived in a command's own mount namespace.
      if (identity) await rm(identity.stageDir, { recursive: true, force: true });
    },

    async acquire(sessionId, spec) {
      const root = await store.open(sessionId);
      const files = createWorkspaceFiles(root, SANDBOX_WORKDIR, runAs);
      // What the host put in the workspace before the first command (the clone) becomes the sandbox user's.
      let handedOver = !runAs;
      // Watched: measured before this handle's first command, then after each (see runInBwrap).
      const disk: DiskQuota =
        diskQuota === 'filesystem' ? { kind: 'filesystem' } : { kind: 'watch', usedBytes: undefined };
      const sessionLog = log.child({ sessionId });
      let egress: Awaited<ReturnType<typeof openEgress>>;
      try {
        egress = spec.network === 'proxy' ? await openEgress(sessionId, sessionLog) : undefined;
      } catch (error) {
        await store.close(sessionId);
        throw error;
      }
      sessionLog.debug({ root, network: spec.network }, 'sandbox acquired');
      let state: 'open' | 'released' | 'destroyed' = 'open';
      const assertOpen = (): void => {
        if (state !== 'open')
          throw new PatchbayError('sandbox_failed', `sandbox for session ${sessionId} was ${state}`);
      };

      const sandbox: Sandbox = {
        sessionId,
        workdir: SANDBOX_WORKDIR,
        async exec(command, opts = {}) {
          assertOpen();
          const { rel } = await files.resolveDir(opts.cwd ?? '.');
          await store.touch(sessionId);
          if (!handedOver && runAs) {
            await handOverTree(root, runAs, opts.signal);
            handedOver = true;
          }
          try {
            return await runCommand(root, rel, spec, egress?.socket, disk, command, opts);
          } finally {
            await store.touch(sessionId).catch(() => {});
          }
        },
        async readFile(p) {
          assertOpen();
          return files.readFile(p);
        },
        async writeFile(p, content) {
          assertOpen();
          return files.writeFile(p, content);
        },
        async listFiles(p, listOptions) {
          assertOpen();
          return files.listFiles(p, listOptions);
        },
        async release() {
          if (state !== 'open') return;
          state = 'released';
          await egress?.proxy.close();
          await store.close(sessionId);
          sessionLog.debug('sandbox released');
        },
        async destroy() {
          if (state === 'destroyed') return;
          if (state === 'open') {
            await egress?.proxy.close();
            await store.close(sessionId);
          }
          state = 'destroyed';
          await store.remove(sessionId);
          sessionLog.debug('sandbox destroyed');
        },
      };
      return sandbox;
    },
  };
}

/**
 * Cgroups when the host lets this process make them ('auto' or 'cgroup'), else rlimits. RLIMIT_NPROC
 * holds as root too: commands then run as the sandbox user, never as uid 0 (which the kernel exempts).
 */
async function chooseEnforcement(
  mode: 'auto' | 'cgroup' | 'rlimit',
  log: Logger,
  cgroupRoot: string | undefined,
): Promise<{ cgroups: CgroupLayout | undefined; enforcement: LimitEnforcement }> {
  if (mode !== 'rlimit') {
    const probe = await probeCgroups(cgroupRoot ? { cgroupRoot } : {});
    if (probe.layout)
      return { cgroups: probe.layout, enforcement: probe.layout.version === 2 ? 'cgroup v2' : 'cgroup v1' };
    if (mode === 'cgroup') {
      throw new PatchbayError(
        'sandbox_unavailable',
        `SANDBOX_LIMITS=cgroup, but no cgroup can be made here (${probe.reason}): delegate one (systemd Delegate=yes) or set SANDBOX_LIMITS=rlimit`,
      );
    }
    log.info({ reason: probe.reason }, 'no usable cgroup: sandbox limits fall back to rlimits');
  }
  return { cgroups: undefined, enforcement: 'rlimit' };
}

/** The egress proxy of one sandbox handle, on its own socket; refusals are reported with the session's id. */
function startSessionProxy(
  socket: string,
  egress: EgressOptions,
  sessionId: string,
  sessionLog: Logger,
): Promise<EgressProxy> {
  return startEgressProxy(socket, {
    policy: egress.policy,
    ...(egress.secrets && { secrets: egress.secrets }),
    ...(egress.resolve && { resolve: egress.resolve }),
    selfAuthority: { host: RELAY_HOST, port: RELAY_PORT },
    onBlocked: (block) => egress.onBlocked?.(sessionId, block),
    log: sessionLog.child({ component: 'egress-proxy' }),
  });
}

/**
 * A file system per workspace where this host can make one ('auto' or 'filesystem'), else the
 * watch: as a non-root server, or where loop devices are missing (most containers).
 */
async function chooseDiskQuota(
  mode: 'auto' | DiskQuota['kind'],
  dataDir: string,
  log: Logger,
): Promise<DiskQuota['kind']> {
  if (mode === 'watch') return 'watch';
  const probe = await probeWorkspaceImages(path.join(dataDir, 'tmp'), process.getuid?.());
  if (probe.ok) return 'filesystem';
  if (mode === 'filesystem') {
    throw new PatchbayError(
      'sandbox_unavailable',
      `SANDBOX_DISK_QUOTA=filesystem, but workspaces cannot have file systems of their own here (${probe.reason}): run as root with /dev/loop-control, or set SANDBOX_DISK_QUOTA=watch`,
    );
  }
  log.info({ reason: probe.reason }, 'workspaces cannot have file systems of their own: the disk quota is watched');
  return 'watch';
}

/** The complete environment of a command: a minimal base plus the caller's variables. */
function commandEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  assertCommandEnv(extra);
  // npm would ask its registry for a newer npm on every `npm test`: a connection nobody asked for,
  // reported as blocked wherever the allowlist leaves the registry out.
  return { PATH: STANDARD_PATH, HOME: home, LANG: 'C.UTF-8', NPM_CONFIG_UPDATE_NOTIFIER: 'false', ...extra };
}
