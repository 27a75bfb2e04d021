import { join } from 'node:path';
import pino from 'pino';
import { createLocalSandboxProvider, type LocalSandboxProvider, type Sandbox } from '../../sandbox/index.ts';
import { prepareWorkspace, type PreparedWorkspace } from '../../src/git/prepare-workspace.ts';
import type { RemoteFixture } from './git-fixture.ts';

export const silentLog = pino({ level: 'silent' });

export type SessionFixture = {
  sandbox: Sandbox;
  workspaceDir: string;
  branch: string;
  prepared: PreparedWorkspace;
};

/** A session as the harness sets it up: workspace prepared on the host, then a real bubblewrap sandbox on it. */
export async function startSession(
  provider: LocalSandboxProvider,
  fixture: RemoteFixture,
  dataDir: string,
  sessionId: string,
  branch = `patchbay/${sessionId}`,
  baseBranch?: string,
): Promise<SessionFixture> {
  const workspaceDir = provider.hostPath(sessionId);
  const prepared = await prepareWorkspace({
    repo: fixture.remote,
    branch,
    workspaceDir,
    dataDir,
    log: silentLog,
    signal: AbortSignal.timeout(30_000),
    ...(baseBranch ? { baseBranch } : {}),
  });
  const sandbox = await provider.acquire(sessionId, { network: 'none' });
  return { sandbox, workspaceDir, branch, prepared };
}

export function createProvider(dataDir: string): Promise<LocalSandboxProvider> {
  return createLocalSandboxProvider({
    dataDir: join(dataDir, 'sandboxes'),
    log: silentLog,
    ttlMinutes: 60,
    mode: 'bwrap',
  });
}

/** Runs a command in the sandbox and fails the test when it fails. */
export async function sh(sandbox: Sandbox, command: string): Promise<string> {
  const result = await sandbox.exec(command);
  if (result.exitCode !== 0)
    throw new Error(`sandbox command failed (${result.exitCode}): ${command}\n${result.stderr}`);
  return result.stdout;
}
