import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyChange } from '../../src/harness/verify/verifier.ts';
import { readVerdict, recordVerdictTool } from '../../src/harness/verify/verdict-answer.ts';
import { createModelProvider } from '../../src/models/create-model-provider.ts';
import { zeroUsage } from '../../src/models/model-provider.ts';
import type { OpenAIRequestBody } from '../fakes/fake-openai.ts';
import { startFakeLocalModelServer, type FakeLocalModelServer } from '../fakes/fake-local-model-server.ts';

const log = pino({ level: 'silent' });
const flat = {
  relevance_score: 2,
  relevance_reason: 'renames the title',
  completeness_score: 2,
  completeness_reason: 'all of it',
  correctness_score: 1,
  correctness_reason: 'no check covers it',
  scope_score: 2,
  scope_reason: 'only the title',
  summary: 'Renames the README title.',
};
const input = {
  task: 'Rename the README title',
  knowledge: '',
  checks: [],
  change: '-# demo\n+# Demo project',
  signal: AbortSignal.timeout(10_000),
};

let fake: FakeLocalModelServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** A model that calls the tool when the server forces it, and otherwise answers in text. */
function verifierScript(body: OpenAIRequestBody) {
  if (typeof body.tool_choice === 'object') return { toolCalls: [{ name: 'record_verdict', arguments: flat }] };
  return { text: `Here is my verdict:\n\`\`\`json\n${JSON.stringify(flat)}\n\`\`\`` };
}

async function verifierOn(options: Partial<Parameters<typeof startFakeLocalModelServer>[0]>) {
  fake = await startFakeLocalModelServer({
    flavor: 'ollama',
    model: 'qwen3-coder',
    contextWindow: 32_768,
    chat: verifierScript,
    ...options,
  });
  const model = createModelProvider(
    { provider: 'openai-compatible', model: 'qwen3-coder', baseUrl: fake.baseUrl, maxRetries: 0 },
    { log },
  );
  return verifyChange(model, input);
}

describe('the verifier on servers with limited tool calling', () => {
  it('sends a flat schema a grammar-constrained server can follow: one level, no anyOf', () => {
    const schema = JSON.stringify(recordVerdictTool.inputSchema);
    expect(schema).not.toMatch(/"(anyOf|oneOf|allOf|\$ref|const)"/);
    const properties = recordVerdictTool.inputSchema.properties as Record<string, Record<string, unknown>>;
    expect(Object.values(properties).every((p) => p.type !== 'object')).toBe(true);
  });

  it('reads the forced tool call of a server that honours tool_choice', async () => {
    const result = await verifierOn({ forcedToolChoice: 'honoured' });
    expect(result).toMatchObject({ kind: 'verdict', verdict: { correctness: { score: 1 }, summary: flat.summary } });
    expect(fake!.refusals).toEqual([]);
  });

  it('reads the JSON in the text of a server that drops the forced tool_choice (Ollama)', async () => {
    const result = await verifierOn({ forcedToolChoice: 'ignored' });
    expect(result).toMatchObject({
      kind: 'verdict',
      verdict: { relevance: { score: 2, reason: 'renames the title' } },
    });
    expect(fake!.calls).toHaveLength(1);
  });

  it('asks for JSON text, without tools, from a server that refuses tool calls', async () => {
    const result = await verifierOn({ flavor: 'vllm', tools: 'none', forcedToolChoice: 'refused' });
    expect(result).toMatchObject({ kind: 'verdict', verdict: { scope: { score: 2 } } });
    expect(fake!.refusals).toHaveLength(1);
    expect(fake!.calls.at(-1)!.body.tools).toBeUndefined();
  });

  it('keeps "no verdict" when neither the tool nor the text gives one', () => {
    const reading = readVerdict({
      content: 'Looks fine to me.',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: zeroUsage,
    });
    expect(reading).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^No verdict came back\. Call record_verdict, or/),
    });
    const partial = readVerdict({
      content: '{"relevance_score": 7}',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: zeroUsage,
    });
    expect(partial.ok).toBe(false);
  });
});
