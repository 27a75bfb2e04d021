import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/core/events.ts';
import {
  startFakeAnthropic,
  toolResultsIn as anthropicResults,
  type AnthropicRequest,
  type FakeAnthropic,
} from '../fakes/fake-anthropic.ts';
import {
  startFakeOpenAI,
  toolResultsIn as openaiResults,
  type FakeOpenAI,
  type OpenAIReply,
  type OpenAIRequestBody,
} from '../fakes/fake-openai.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

/**
 * One multi-turn session (read a file, edit it, run a command, finish) through the whole app,
 * served in turn by each real provider adapter against its vendor's loopback fake. The session
 * events and the committed tree must come out the same whichever provider served it.
 */
type Step = { text?: string; tool?: { name: string; input: Record<string, unknown> } };

function step(index: number, lastResult: string): Step {
  switch (index) {
    case 0:
      return { text: 'Reading the README first.', tool: { name: 'read_file', input: { path: 'README.md' } } };
    case 1:
      return {
        tool: { name: 'edit_file', input: { path: 'README.md', old_string: '# demo', new_string: '# Demo project' } },
      };
    case 2:
      // Refused by the command policy at every autonomy (a force push would be held for approval
      // under the default ask-risky): this result must reach the model flagged as an error.
      return { tool: { name: 'run_shell', input: { command: 'git push origin main' } } };
    case 3:
      return { tool: { name: 'run_shell', input: { command: 'head -n 1 README.md' } } };
    default: {
      // Quoting the last result proves it made the round trip in the vendor's format.
      const heading = /# Demo project/.test(lastResult) ? '# Demo project' : 'something else';
      return { text: `Renamed the title; the README now starts with "${heading}".` };
    }
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => (c as { text?: string }).text ?? '').join('');
  return '';
}

function anthropicScript(body: AnthropicRequest) {
  const index = body.messages.filter((m) => m.role === 'assistant').length;
  const last = body.messages.at(-1)!;
  const result = Array.isArray(last.content)
    ? last.content.filter((b) => b.type === 'tool_result').at(-1)?.content
    : undefined;
  const s = step(index, textOf(result));
  return {
    content: [
      ...(s.text ? [{ type: 'text' as const, text: s.text }] : []),
      ...(s.tool ? [{ type: 'tool_use' as const, name: s.tool.name, input: s.tool.input }] : []),
    ],
  };
}

const toReply = (s: Step): OpenAIReply => ({
  text: s.text,
  toolCalls: s.tool ? [{ name: s.tool.name, arguments: s.tool.input }] : [],
  argChunk: 3,
});

function responsesScript(body: OpenAIRequestBody) {
  const outputs = (body.input as Array<{ type?: string; output?: unknown }>).filter(
    (i) => i.type === 'function_call_output',
  );
  return toReply(step(outputs.length, textOf(outputs.at(-1)?.output)));
}

function chatScript(body: OpenAIRequestBody) {
  const messages = body.messages as Array<{ role: string; content?: unknown }>;
  const last = messages.at(-1)!;
  return toReply(
    step(messages.filter((m) => m.role === 'assistant').length, last.role === 'tool' ? textOf(last.content) : ''),
  );
}

/** The parts of the log that must not depend on the provider. */
function normalize(events: StoredEvent[]) {
  return events
    .filter((e) => e.event.type !== 'usage')
    .map(({ event }) => {
      switch (event.type) {
        case 'tool-start':
          return { type: event.type, name: event.name, input: event.input };
        case 'tool-end':
          return { type: event.type, name: event.name, isError: event.isError, output: event.output };
        case 'assistant-message':
          return { type: event.type, text: event.text };
        case 'status-changed':
          return { type: event.type, from: event.from, to: event.to };
        case 'diff-updated':
          return { type: event.type, stat: event.stat };
        default:
          return { type: event.type };
      }
    });
}

describe('the same session through every provider, end to end', () => {
  let remote: RemoteFixture;
  let anthropic: FakeAnthropic;
  let openai: FakeOpenAI;
  let zen: FakeOpenAI;
  let local: FakeOpenAI;
  const outcomes = new Map<string, { events: unknown; tree: string; summary: string | undefined }>();

  beforeAll(async () => {
    remote = await createRemote();
    anthropic = await startFakeAnthropic({ script: anthropicScript, apiKey: 'ak' });
    openai = await startFakeOpenAI({ responses: responsesScript, apiKey: 'ok' });
    zen = await startFakeOpenAI({ responses: responsesScript, chat: chatScript, apiKey: 'zk', pathPrefix: '/zen/v1' });
    local = await startFakeOpenAI({ chat: chatScript, apiKey: null });
  });
  afterAll(async () => {
    await Promise.all([anthropic, openai, zen, local].map((f) => f?.close()));
    await remote.cleanup();
  });

  const providers: [string, () => Record<string, string>][] = [
    [
      'anthropic',
      () => ({
        MODEL_PROVIDER: 'anthropic',
        MODEL: 'claude-sonnet-4-6',
        ANTHROPIC_API_KEY: 'ak',
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
      }),
    ],
    [
      'openai',
      () => ({
        MODEL_PROVIDER: 'openai',
        MODEL: 'gpt-5.1-codex',
        OPENAI_API_KEY: 'ok',
        OPENAI_BASE_URL: openai.baseUrl,
      }),
    ],
    [
      'opencode-zen',
      () => ({
        MODEL_PROVIDER: 'opencode-zen',
        MODEL: 'gpt-5.1-codex',
        OPENCODE_ZEN_API_KEY: 'zk',
        OPENCODE_ZEN_BASE_URL: zen.baseUrl,
      }),
    ],
    [
      'openai-compatible',
      () => ({ MODEL_PROVIDER: 'openai-compatible', MODEL: 'qwen3-coder', OPENAI_BASE_URL: local.baseUrl }),
    ],
  ];

  it.each(providers)('%s', { timeout: 180_000 }, async (name, env) => {
    const app = await startTestPatchbay({ env: { ...env(), MODEL_MAX_RETRIES: '0' } });
    try {
      const started = await app.service.start({
        thread: { source: 'web' },
        actor: { source: 'web', id: 'ada', name: 'Ada', email: 'ada@example.com' },
        text: 'Rename the README title',
        repo: remote.remote,
      });
      if (started.kind !== 'started') throw new Error(started.kind);
      const session = await waitForStatus(app, started.session.id, ['completed', 'failed']);
      expect(session.error).toBeNull();
      expect(session.status).toBe('completed');
      expect(session.usage.inputTokens).toBeGreaterThan(0);
      // What the model last received, read in its vendor's wire format: only the refused push is an error.
      // The agent's last call: the verifier's calls after it force its record_verdict tool.
      const agentCall = (c: { body: unknown }) =>
        !['tool', 'function'].includes(
          ((c.body as { tool_choice?: { type?: string } }).tool_choice as { type?: string } | undefined)?.type ?? '',
        );
      const last =
        name === 'anthropic'
          ? anthropic.calls.filter(agentCall).at(-1)!
          : { openai, 'opencode-zen': zen, 'openai-compatible': local }[name]!.calls.filter(agentCall).at(-1)!;
      const results =
        name === 'anthropic'
          ? anthropicResults(last.body as AnthropicRequest)
          : openaiResults((last as FakeOpenAI['calls'][number]).endpoint, last.body as OpenAIRequestBody);
      expect(results.map((r) => r.isError)).toEqual([false, false, true, false]);
      expect(results[2]!.text).toContain('git push is not available to the agent');
      const tree = await git(remote.remote, 'rev-parse', `${session.result!.commit}^{tree}`);
      outcomes.set(name, {
        events: normalize(await app.store.events(session.id)),
        tree,
        summary: session.result?.summary,
      });
    } finally {
      await app.dispose();
    }
  });

  it('gave identical events, summary and committed tree everywhere, and no fake refused a request', () => {
    expect([...outcomes.keys()]).toEqual(providers.map(([name]) => name));
    const [first, ...rest] = [...outcomes.values()];
    expect(first!.summary).toBe('Renamed the title; the README now starts with "# Demo project".');
    for (const other of rest) expect(other).toEqual(first);
    for (const fake of [anthropic, openai, zen, local]) expect(fake.rejections).toEqual([]);
    // Five agent calls, then the verifier (the same model): its scripted reply is no verdict, so it is asked once more.
    expect(anthropic.calls).toHaveLength(7);
    expect(zen.calls.map((c) => c.endpoint)).toEqual(Array(7).fill('responses'));
  });
});
