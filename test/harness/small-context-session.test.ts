import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenAIReply, OpenAIRequestBody } from '../fakes/fake-openai.ts';
import { startFakeLocalModelServer, type FakeLocalModelServer } from '../fakes/fake-local-model-server.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

/**
 * Whole sessions against self-hosted model servers with an 8k context, as vLLM and llama.cpp state
 * and enforce it: the session runs to its end with its commit, and no request overruns the window.
 */
type Step = { text?: string; tool?: { name: string; input: Record<string, unknown> } };

const steps: Step[] = [
  { text: 'Reading the README first.', tool: { name: 'read_file', input: { path: 'README.md' } } },
  { tool: { name: 'edit_file', input: { path: 'README.md', old_string: '# demo', new_string: '# Demo project' } } },
  // Long outputs: with the tokenizer below, the prompt after the second overruns 8k.
  { tool: { name: 'run_shell', input: { command: 'seq 100000 100600' } } },
  { tool: { name: 'run_shell', input: { command: 'seq 200000 200600' } } },
  { tool: { name: 'run_shell', input: { command: 'head -n 1 README.md' } } },
];

/** The agent's steps by the tool results so far (a compaction drops earlier ones: then it finishes). */
function chatScript(body: OpenAIRequestBody): OpenAIReply {
  const messages = body.messages as Array<{ role: string; content?: unknown; tool_call_id?: string }>;
  if (typeof body.tool_choice === 'object')
    return { toolCalls: [{ name: 'record_verdict', arguments: passingVerdict }] };
  if ((messages[0]?.content as string | undefined)?.startsWith('You compress'))
    return { text: 'The README title was renamed to "# Demo project".' };
  const compacted = messages.some((m) => String(m.content).startsWith('[Summary of the earlier conversation'));
  const done = messages.filter((m) => m.role === 'tool').length;
  const s = (!compacted && steps[done]) || { text: 'Renamed the README title.' };
  return { text: s.text, toolCalls: s.tool ? [{ name: s.tool.name, arguments: s.tool.input }] : [] };
}

const score = (reason: string) => ({ score: 2, reason });
const passingVerdict = {
  relevance: score('renames the title'),
  completeness: score('all of it'),
  correctness: score('the file reads right'),
  scope: score('only the title'),
  summary: 'Renames the README title.',
};

describe('a session on an 8k-context model server', () => {
  let remote: RemoteFixture;

  beforeAll(async () => {
    remote = await createRemote();
  });
  afterAll(async () => {
    await remote.cleanup();
  });

  async function runSession(fake: FakeLocalModelServer) {
    const app = await startTestPatchbay({
      env: { MODEL_PROVIDER: 'openai-compatible', MODEL: 'qwen3-coder', OPENAI_BASE_URL: fake.baseUrl },
    });
    try {
      const started = await app.service.start({
        thread: { source: 'web' },
        actor: { source: 'web', id: 'ada', name: 'Ada', email: 'ada@example.com' },
        text: 'Rename the README title to "Demo project"',
        repo: remote.remote,
      });
      if (started.kind !== 'started') throw new Error(started.kind);
      const session = await waitForStatus(app, started.session.id, ['completed', 'failed'], 120_000);
      return { session, events: await app.store.events(session.id) };
    } finally {
      await app.dispose();
    }
  }

  it('as vLLM states it: runs to its end, every request within max_model_len', { timeout: 180_000 }, async () => {
    const fake = await startFakeLocalModelServer({
      flavor: 'vllm',
      model: 'qwen3-coder',
      contextWindow: 8_192,
      chat: chatScript,
    });
    try {
      const { session } = await runSession(fake);
      expect(session.error).toBeNull();
      expect(session.status).toBe('completed');
      expect(await git(remote.remote, 'show', `${session.result!.commit}:README.md`)).toBe('# Demo project');
      expect(fake.refusals).toEqual([]);
      for (const { body } of fake.calls)
        expect(fake.promptTokens(body) + (body.max_tokens as number)).toBeLessThanOrEqual(8_192);
    } finally {
      await fake.close();
    }
  });

  it('as llama.cpp refuses a prompt over n_ctx: compacts once and goes on', { timeout: 180_000 }, async () => {
    // A dense tokenizer (2.4 characters a token): the prompt overruns the window before the estimate says so.
    const fake = await startFakeLocalModelServer({
      flavor: 'llama.cpp',
      model: 'qwen3-coder',
      contextWindow: 8_192,
      charsPerToken: 2.4,
      chat: chatScript,
    });
    try {
      const { session, events } = await runSession(fake);
      expect(session.error).toBeNull();
      expect(session.status).toBe('completed');
      expect(fake.refusals.length).toBeGreaterThan(0);
      expect(fake.refusals[0]).toMatch(/exceeds the available context size \(8192 tokens\)/);
      expect(events.some((e) => e.event.type === 'context-compacted')).toBe(true);
    } finally {
      await fake.close();
    }
  });
});
