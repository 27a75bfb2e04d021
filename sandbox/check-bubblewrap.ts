import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';
import { buildBwrapArgs, STANDARD_PATH, type HostSystemEntry } from './bwrap-args.ts';
import { probeHostSystem } from './probe-host-system.ts';
import { runProcess } from './run-process.ts';

const FALLBACK_HINT = 'or set SANDBOX=unsafe-local to run commands without isolation';

/**
 * Runs `true` once inside a sandbox built exactly like a real one, so a missing binary or a
 * kernel that refuses namespaces is reported at startup with one actionable message
 * (PatchbayError 'sandbox_unavailable') instead of failing every command later.
 */
export async function checkBubblewrap(bwrapPath = 'bwrap', hostSystem?: readonly HostSystemEntry[]): Promise<void> {
  const workspace = await mkdtemp(path.join(tmpdir(), 'patchbay-bwrap-check-'));
  try {
    const home = '/tmp/home';
    const args = buildBwrapArgs({
      workspaceHostPath: workspace,
      workdir: '/workspace',
      cwd: '/workspace',
      network: 'none',
      env: { PATH: STANDARD_PATH, HOME: home },
      hostSystem: hostSystem ?? (await probeHostSystem()),
      home,
      command: 'true',
    });
    let result;
    try {
      result = await runProcess({ file: bwrapPath, args, cwd: workspace, env: { PATH: STANDARD_PATH }, timeoutMs: 15_000, maxOutputBytes: 4096 });
    } catch (error) {
      const code = (error as { cause?: NodeJS.ErrnoException }).cause?.code;
      const what = code === 'ENOENT' ? 'is not installed' : `cannot be started (${code ?? String(error)})`;
      throw new PatchbayError(
        'sandbox_unavailable',
        `bubblewrap (bwrap) ${what}${bwrapPath === 'bwrap' ? '' : ` at ${bwrapPath}`}: apt-get install bubblewrap, ${FALLBACK_HINT}`,
        { cause: error },
      );
    }
    if (result.exitCode !== 0) {
      const detail = result.stderr.trim() || (result.timedOut ? 'timed out' : `exit code ${result.exitCode}`);
      throw new PatchbayError(
        'sandbox_unavailable',
        `bubblewrap (bwrap) cannot create its sandbox (${detail}): allow unprivileged user namespaces ` +
          `(for example sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04), ${FALLBACK_HINT}`,
      );
    }
  } finally {
    await rm(workspace, { recursive: true, force: true });
  }
}
