import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { expect } from 'vitest';
import { createLocalSandboxProvider, type Sandbox } from '../../../sandbox/index.ts';
import type { ToolContext } from '../../../src/agent/tool.ts';
import { removeDataDir } from '../../sandbox/sandbox-test-helpers.ts';

export type ToolTestSandbox = {
  sandbox: Sandbox;
  ctx: (signal?: AbortSignal) => ToolContext;
  /** Runs a setup command in the sandbox and fails the test when it fails. */
  sh: (command: string) => Promise<string>;
  cleanup: () => Promise<void>;
};

/** A real bubblewrap sandbox on a temp data dir, its workspace a fresh git repository. */
export async function createToolTestSandbox(sessionId: string): Promise<ToolTestSandbox> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'patchbay-agent-tools-'));
  const log = pino({ level: 'silent' });
  const provider = await createLocalSandboxProvider({
    dataDir,
    log,
    ttlMinutes: 60,
    mode: 'bwrap',
    bwrapPath: '/usr/bin/bwrap',
  });
  const sandbox = await provider.acquire(sessionId, { network: 'none' });
  const sh = async (command: string): Promise<string> => {
    const result = await sandbox.exec(command);
    expect(result.exitCode, `${command}\n${result.stderr}`).toBe(0);
    return result.stdout;
  };
  await sh('git init -q -b main && git config user.name "Tool Test" && git config user.email tools@example.invalid');
  return {
    sandbox,
    ctx: (signal = new AbortController().signal) => ({ sandbox, sessionId, signal, log }),
    sh,
    cleanup: async () => {
      await sandbox.destroy();
      await removeDataDir(dataDir);
    },
  };
}
