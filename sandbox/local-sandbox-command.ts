import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { STANDARD_PATH } from './bwrap-args.ts';
import { runInBwrap, type DiskQuota } from './bwrap-launch.ts';
import { proxyEnv, withEgressRelay } from './egress-relay.ts';
import type { SandboxHost } from './local-sandbox-host.ts';
import { runProcess } from './run-process.ts';
import type { SandboxLimits } from './sandbox-limits.ts';
import type { ExecOptions, ExecResult, SandboxSpec } from './sandbox.ts';
import { assertCommandEnv, SHARED_OBJECTS_PATH } from './sandbox.ts';
import type { SandboxIdentity } from './sandbox-user.ts';

/** Where the workspace appears inside the sandbox. */
export const SANDBOX_WORKDIR = '/workspace';
export const DEFAULT_EXEC_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const SANDBOX_HOME = '/tmp/home';

/** What every command of one provider runs with, fixed at start. */
export type CommandContext = {
  /** Undefined in 'unsafe-local' mode: the command runs on the host. */
  host: SandboxHost | undefined;
  bwrapPath: string;
  limits: SandboxLimits;
  identity: SandboxIdentity | undefined;
  /** SANDBOX_SECRETS names, each reached at its PATCHBAY_SECRET_<NAME>_URL in a 'proxy' sandbox. */
  secretNames: readonly string[];
  /** Host directories shown read-only in every command (the engines' CLIs, see LocalSandboxProviderOptions.engineBinds). */
  engineBinds: readonly { hostPath: string; sandboxPath: string }[];
};

/** Where one command runs: its workspace, its cwd relative to it, and the sandbox handle's network and disk. */
export type CommandTarget = {
  root: string;
  cwdRel: string;
  spec: SandboxSpec;
  egressSocket: string | undefined;
  disk: DiskQuota;
};

/** Runs one command of a sandbox handle: under bubblewrap, or (unsafe-local) on the host with a throwaway home. */
export async function runCommand(
  ctx: CommandContext,
  target: CommandTarget,
  command: string,
  opts: ExecOptions,
): Promise<ExecResult> {
  const base = {
    timeoutMs: opts.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
    maxOutputBytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    ...(opts.onStdout && { onStdout: opts.onStdout }),
  };
  if (ctx.host) {
    const { spec, egressSocket } = target;
    const proxied = spec.network === 'proxy';
    const env = commandEnv(SANDBOX_HOME, proxied ? { ...opts.env, ...proxyEnv(ctx.secretNames) } : opts.env);
    return runInBwrap({
      bwrapPath: ctx.bwrapPath,
      workspaceHostPath: target.root,
      workdir: SANDBOX_WORKDIR,
      cwd: target.cwdRel === '.' ? SANDBOX_WORKDIR : `${SANDBOX_WORKDIR}/${target.cwdRel}`,
      network: spec.network,
      ...(egressSocket && { egressSocket }),
      readOnlyBinds: [
        ...(spec.sharedObjects ? [{ hostPath: spec.sharedObjects, sandboxPath: SHARED_OBJECTS_PATH }] : []),
        ...ctx.engineBinds,
      ],
      env,
      hostSystem: ctx.host.hostSystem,
      usr: ctx.host.usr,
      home: SANDBOX_HOME,
      limits: ctx.limits,
      seccomp: ctx.host.seccomp,
      cgroups: ctx.host.cgroups,
      ...(ctx.identity && { identity: ctx.identity }),
      disk: target.disk,
      command: proxied ? withEgressRelay(command) : command,
      ...base,
    });
  }
  // Unsafe mode still hides the host environment and gives each command a throwaway home.
  const home = await mkdtemp(path.join(tmpdir(), 'patchbay-home-'));
  try {
    return await runProcess({
      file: '/bin/sh',
      args: ['-c', command],
      cwd: path.join(target.root, target.cwdRel),
      env: commandEnv(home, opts.env),
      ...base,
    });
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** The complete environment of a command: a minimal base plus the caller's variables. */
function commandEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  assertCommandEnv(extra);
  // npm would ask its registry for a newer npm on every `npm test`: a connection nobody asked for,
  // reported as blocked wherever the allowlist leaves the registry out.
  return { PATH: STANDARD_PATH, HOME: home, LANG: 'C.UTF-8', NPM_CONFIG_UPDATE_NOTIFIER: 'false', ...extra };
}
