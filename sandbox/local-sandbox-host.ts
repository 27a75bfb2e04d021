import path from 'node:path';
import type { Logger } from 'pino';
import { PatchbayError } from '../src/core/errors.ts';
import { STANDARD_PATH, USR_PATHS, type HostSystemEntry } from './bwrap-args.ts';
import type { DiskQuota } from './bwrap-launch.ts';
import { checkBubblewrap } from './check-bubblewrap.ts';
import { probeCgroups, type CgroupLayout } from './cgroup-limits.ts';
import { checkSocat } from './egress-relay.ts';
import { probeHostSystem } from './probe-host-system.ts';
import { buildSeccompFilter, seccompArchFor } from './seccomp-filter.ts';
import type { SandboxLimits } from './sandbox-limits.ts';
import type { SandboxIdentity } from './sandbox-user.ts';
import { probeWorkspaceImages } from './workspace-image.ts';

/** How limits are enforced on this host, as probed at start. */
export type LimitEnforcement = 'cgroup v2' | 'cgroup v1' | 'rlimit';

/** What a 'bwrap' provider learned about this host at start, and every command of it uses. */
export type SandboxHost = {
  /** The top-level system paths (see SYSTEM_PATHS) and the parts of /usr bound read-only. */
  hostSystem: HostSystemEntry[];
  usr: HostSystemEntry[];
  /** The compiled seccomp filter; undefined on an architecture it does not cover. */
  seccomp: Buffer | undefined;
  cgroups: CgroupLayout | undefined;
  enforcement: LimitEnforcement;
  diskQuota: DiskQuota['kind'];
};

export type SandboxHostInput = {
  bwrapPath: string;
  dataDir: string;
  limits: SandboxLimits;
  limitMode: 'auto' | 'cgroup' | 'rlimit';
  diskQuota: 'auto' | DiskQuota['kind'];
  usrLocal?: boolean;
  cgroupRoot?: string;
  /** Sandboxes may have network 'proxy' (egress options given): socat must be here. */
  proxied: boolean;
  identity?: SandboxIdentity;
};

/**
 * Probes what this host offers a sandbox (system paths, seccomp, cgroups, workspace file systems)
 * and checks bubblewrap once with it, so a host that cannot sandbox fails at startup with an
 * actionable PatchbayError('sandbox_unavailable').
 */
export async function probeSandboxHost(input: SandboxHostInput, log: Logger): Promise<SandboxHost> {
  const hostSystem = await probeHostSystem();
  const usr = await probeHostSystem(input.usrLocal ? [...USR_PATHS, '/usr/local'] : USR_PATHS);
  const arch = seccompArchFor(process.arch);
  const seccomp = arch ? buildSeccompFilter(arch) : undefined;
  if (!arch)
    log.warn({ arch: process.arch }, 'no seccomp filter for this architecture: sandbox commands run without one');
  const { cgroups, enforcement } = await chooseEnforcement(input.limitMode, log, input.cgroupRoot);
  const { limits, identity } = input;
  await checkBubblewrap(input.bwrapPath, { hostSystem, usr, limits, seccomp, cgroups, ...(identity && { identity }) });
  const diskQuota = await chooseDiskQuota(input.diskQuota, input.dataDir, log);
  log.info(
    { enforcement, diskQuota, limits, sandboxUid: identity?.user.uid ?? process.getuid?.() },
    `sandbox limits enforced with ${enforcement}`,
  );
  if (input.proxied) checkSocat(STANDARD_PATH);
  return { hostSystem, usr, seccomp, cgroups, enforcement, diskQuota };
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
