import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createLocalSandboxProvider } from '../../../sandbox/index.ts';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { type RunInput, runAgent, type RunLimits, type RunOutcome } from '../../../src/agent/agent-runner.ts';
import { createDefaultTools } from '../../../src/agent/default-tools.ts';
import { createToolRegistry } from '../../../src/agent/tool-registry.ts';
import type { Actor } from '../../../src/core/actor.ts';
import type { ModelMessage, ModelProvider } from '../../../src/models/model-provider.ts';
import { createSessionStore, type SessionStore } from '../../../src/sessions/store/session-store.ts';
import { createTestDatabase } from '../../helpers/test-database.ts';
import { removeDataDir } from '../../sandbox/sandbox-test-helpers.ts';

export const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
export const bob: Actor = { source: 'slack', id: 'U2', name: 'Bob Roe' };

export type RunnerFixture = {
  store: SessionStore;
  sandboxFor(sessionId: string): Promise<Sandbox>;
  /** A session in the store with `prompt` as its first user message, status running. */
  newSession(prompt: string): Promise<string>;
  run(
    sessionId: string,
    model: ModelProvider,
    options?: {
      limits?: Partial<RunLimits>;
      signal?: AbortSignal;
      approvals?: RunInput['approvals'];
      pictures?: RunInput['pictures'];
    },
  ): Promise<RunOutcome>;
  close(): Promise<void>;
};

/** The real runner on the real store (fresh PostgreSQL database) and a real bubblewrap sandbox. */
export async function createRunnerFixture(): Promise<RunnerFixture> {
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const database = await createTestDatabase();
  const store = createSessionStore(database.db);
  const dataDir = await mkdtemp(join(tmpdir(), 'patchbay-runner-'));
  const sandboxes = await createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'bwrap' });
  const tools = createToolRegistry(createDefaultTools());
  const acquired = new Map<string, Sandbox>();
  const sandboxFor = async (sessionId: string) => {
    let sandbox = acquired.get(sessionId);
    if (!sandbox) {
      sandbox = await sandboxes.acquire(sessionId, { network: 'none' });
      acquired.set(sessionId, sandbox);
    }
    return sandbox;
  };
  return {
    store,
    sandboxFor,
    async newSession(prompt) {
      const id = randomUUID();
      await store.create({
        id,
        repo: 'https://example.com/acme/widgets',
        prompt,
        title: prompt.slice(0, 40),
        requester: alice,
        thread: { source: 'web' },
      });
      await store.transition(id, 'start');
      return id;
    },
    async run(sessionId, model, options = {}) {
      return runAgent({
        sessionId,
        system: 'You are a coding agent working in /workspace.',
        model,
        tools,
        sandbox: await sandboxFor(sessionId),
        runLog: store,
        signal: options.signal ?? AbortSignal.timeout(60_000),
        log,
        ...(options.limits && { limits: options.limits }),
        ...(options.approvals && { approvals: options.approvals }),
        ...(options.pictures && { pictures: options.pictures }),
      });
    },
    async close() {
      for (const sandbox of acquired.values()) await sandbox.release();
      await database.close();
      await removeDataDir(dataDir);
    },
  };
}

/** Every tool result sits right after the assistant message that made the call (or its siblings). */
export function toolResultsFollowTheirCalls(messages: readonly ModelMessage[]): boolean {
  let open = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant') open = new Set((m.toolCalls ?? []).map((c) => c.id));
    else if (m.role === 'tool') {
      if (!open.has(m.toolCallId)) return false;
      open.delete(m.toolCallId);
    } else if (open.size > 0) return false;
  }
  return true;
}

export function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

export const transcriptText = (messages: readonly ModelMessage[]) =>
  messages
    .map((m) => (m.role === 'assistant' ? `${m.content ?? ''}${JSON.stringify(m.toolCalls ?? [])}` : m.content))
    .join('\n');
