import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';
import { STANDARD_PATH, USR_PATHS, type HostSystemEntry } from './bwrap-args.ts';
import { runInBwrap } from './bwrap-launch.ts';
import type { CgroupLayout } from './cgroup-limits.ts';
import { probeHostSystem } from './probe-host-system.ts';
import { runProcess } from './run-process.ts';
import { buildSeccompFilter, seccompArchFor } from './seccomp-filter.ts';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './sandbox-limits.ts';
import { SHARED_OBJECTS_PATH, type ExecResult } from './sandbox.ts';
import type { SandboxIdentity } from './sandbox-user.ts';

/** How the real sandboxes will be built; the check runs `true` in one built the same way. */
export type BubblewrapCheckSetup = {
  hostSystem: readonly HostSystemEntry[];
  usr: readonly HostSystemEntry[];
  limits: SandboxLimits;
  seccomp: Buffer | undefined;
  cgroups: CgroupLayout | undefined;
  identity?: SandboxIdentity;
};

const FALLBACK_HINT = 'or set SANDBOX=unsafe-local to run commands without isolation';

/**
 * Runs `true` once inside a sandbox built exactly like a real one, so a missing binary or a
 * kernel that refuses namespaces is reported at startup with one actionable message
 * (PatchbayError 'sandbox_unavailable') instead of failing every command later.
 */
export async function checkBubblewrap(bwrapPath = 'bwrap', setup?: BubblewrapCheckSetup): Promise<void> {
  const workspace = await mkdtemp(path.join(tmpdir(), 'patchbay-bwrap-check-'));
  try {
    const home = '/tmp/home';
    const arch = seccompArchFor(process.arch);
    const built = setup ?? {
      hostSystem: await probeHostSystem(),
      usr: await probeHostSystem(USR_PATHS),
      limits: DEFAULT_SANDBOX_LIMITS,
      seccomp: arch && buildSeccompFilter(arch),
      cgroups: undefined,
    };
    if (built.identity) await chown(workspace, built.identity.user.uid, built.identity.user.gid);
    let result: Awaited<ReturnType<typeof runInBwrap>>;
    let starting = bwrapPath;
    try {
      // Spawned directly first: a missing binary is an ENOENT here, not a launcher's exit 127.
      await runProcess({
        file: bwrapPath,
        args: ['--version'],
        cwd: workspace,
        env: { PATH: STANDARD_PATH },
        timeoutMs: 15_000,
        maxOutputBytes: 4096,
      });
      if (built.identity) starting = 'unshare';
      result = await runInBwrap({
        ...built,
        ...(built.identity && { identity: built.identity }),
        bwrapPath,
        workspaceHostPath: workspace,
        workdir: '/workspace',
        cwd: '/workspace',
        network: 'none',
        env: { PATH: STANDARD_PATH, HOME: home },
        home,
        // As root, a read-only bind is an overlay (stageBinds): checked with the workspace as its source.
        ...(built.identity && { readOnlyBinds: [{ hostPath: workspace, sandboxPath: SHARED_OBJECTS_PATH }] }),
        command: 'true',
        disk: { kind: 'watch', usedBytes: 0 },
        timeoutMs: 15_000,
        maxOutputBytes: 4096,
      });
    } catch (error) {
      const code = (error as { cause?: NodeJS.ErrnoException }).cause?.code;
      if (starting === 'unshare') {
        throw new PatchbayError(
          'sandbox_unavailable',
          `as root the sandbox starts with unshare, mount and setpriv, and unshare cannot be started (${code ?? String(error)}): apt-get install util-linux, ${FALLBACK_HINT}`,
          { cause: error },
        );
      }
      const what = code === 'ENOENT' ? 'is not installed' : `cannot be started (${code ?? String(error)})`;
      throw new PatchbayError(
        'sandbox_unavailable',
        `bubblewrap (bwrap) ${what}${bwrapPath === 'bwrap' ? '' : ` at ${bwrapPath}`}: apt-get install bubblewrap, ${FALLBACK_HINT}`,
        { cause: error },
      );
    }
    if (result.exitCode !== 0) throw refusal(result, built.identity);
  } finally {
    await rm(workspace, { recursive: true, force: true });
  }
}

/** Why the check's sandbox failed to run `true`, as the one actionable message start-up gives. */
function refusal(result: ExecResult, identity: SandboxIdentity | undefined): PatchbayError {
  const detail = result.stderr.trim() || (result.timedOut ? 'timed out' : `exit code ${result.exitCode}`);
  if (identity && /unshare|mount|setpriv|overlay/.test(detail)) {
    return new PatchbayError(
      'sandbox_unavailable',
      `as root, sandbox commands run as uid ${identity.user.uid} from a private mount namespace, which this host refuses (${detail}): ` +
        `run Patchbay as a non-root user (recommended), or give it CAP_SYS_ADMIN, overlayfs and util-linux (unshare, mount, setpriv), ${FALLBACK_HINT}`,
    );
  }
  if (/prlimit/.test(detail)) {
    return new PatchbayError(
      'sandbox_unavailable',
      `the sandbox needs prlimit (${detail}): apt-get install util-linux, ${FALLBACK_HINT}`,
    );
  }
  return new PatchbayError(
    'sandbox_unavailable',
    `bubblewrap (bwrap) cannot create its sandbox (${detail}): allow unprivileged user namespaces ` +
      `(for example sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04), ${FALLBACK_HINT}`,
  );
}
