/**
 * What prompt caching, tool-output truncation and compaction save on a long session.
 * Drives a 60-turn session (one command per turn, each printing ~6,000 characters) through the
 * Anthropic provider against the loopback Anthropic fake, which bills cache reads and writes from
 * the cache_control breakpoints it receives, as the API does. Tokens are the fake's estimate
 * (4 characters each). Run: npm exec -- node bench/model-caching.ts
 */
import pino from 'pino';
import { createAnthropicProvider } from '../src/models/anthropic-provider.ts';
import { capText, GENERIC_CUT_HINT } from '../src/agent/output-cap.ts';
import { compactTranscript, estimateMessageTokens } from '../src/models/context-budget.ts';
import type { ModelMessage, ToolSpec, TurnResult } from '../src/models/model-provider.ts';
import { estimateCostUsd } from '../src/models/model-catalog.ts';
import { startFakeAnthropic } from '../test/fakes/fake-anthropic.ts';
import type { AnthropicRequest } from '../test/fakes/fake-anthropic.ts';
import { driveSession } from '../test/models/drive-session.ts';

const TURNS = 60;
const OUTPUT_CHARS = 6_000;
const TRUNCATE_AT = 2_000;
/** A small simulated window so compaction happens within 60 turns. */
const WINDOW = 40_000;
const model = 'claude-sonnet-4-6';
const log = pino({ level: 'silent' });

const tools: ToolSpec[] = ['run_command', 'read_file', 'write_file', 'list_files', 'search'].map((name) => ({
  name,
  description: `${name}: ${'Detailed usage notes for the model. '.repeat(20)}`,
  inputSchema: { type: 'object', properties: { arg: { type: 'string' } }, required: ['arg'] },
}));
const system = `You are Patchbay, a coding agent. ${'Follow the repository conventions carefully. '.repeat(60)}`;

function script(body: AnthropicRequest) {
  const turn = body.messages.filter((m) => m.role === 'assistant').length;
  if (turn >= TURNS - 1) return { content: [{ type: 'text' as const, text: 'All done.' }] };
  return {
    content: [
      { type: 'text' as const, text: `Step ${turn + 1}: checking.` },
      { type: 'tool_use' as const, name: 'run_command', input: { arg: `npm test -- --shard ${turn}` } },
    ],
  };
}

function commandOutput(n: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < OUTPUT_CHARS; i++)
    lines.push(`run ${n} line ${i}: ok test_${n}_${i} (${(n * 31 + i * 7) % 97} ms)`);
  return lines.join('\n').slice(0, OUTPUT_CHARS);
}

type Run = { turns: TurnResult[]; label: string };

async function run(label: string, opts: { caching: boolean; budget: boolean }): Promise<Run> {
  const fake = await startFakeAnthropic({ script });
  try {
    const provider = createAnthropicProvider({
      model,
      apiKey: 'test-anthropic-key',
      baseUrl: fake.baseUrl,
      maxRetries: 0,
      promptCaching: opts.caching,
      log,
    });
    let n = 0;
    const result = await driveSession(provider, {
      system,
      prompt: 'Make the whole test suite pass.',
      tools,
      maxTurns: TURNS + 5,
      execute: () => ({ content: commandOutput(n++) }),
      ...(opts.budget
        ? {
            transformResult: (text: string) => capText(text, TRUNCATE_AT, GENERIC_CUT_HINT),
            beforeTurn: async (messages: ModelMessage[]) =>
              (
                await compactTranscript(messages, {
                  contextWindow: WINDOW,
                  estimateTokens: estimateMessageTokens,
                  summarize: async (older) =>
                    `Ran ${older.filter((m) => m.role === 'tool').length} test shards; all passed so far.`,
                })
              ).messages,
          }
        : {}),
    });
    if (fake.rejections.length > 0) throw new Error(`fake refused: ${fake.rejections[0]}`);
    return { turns: result.turns, label };
  } finally {
    await fake.close();
  }
}

/** Input billed in base-price token equivalents: writes cost 1.25×, reads 0.1×. */
function billed(t: TurnResult): number {
  const u = t.usage;
  return u.inputTokens - u.cacheReadTokens - u.cacheWriteTokens + 1.25 * u.cacheWriteTokens + 0.1 * u.cacheReadTokens;
}
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const fmt = (x: number) => Math.round(x).toLocaleString('en-US');

const cached = await run('caching on', { caching: true, budget: false });
const uncached = await run('caching off', { caching: false, budget: false });
const budgeted = await run('caching on + truncation + compaction', { caching: true, budget: true });
const budgetedNoCache = await run('caching off + truncation + compaction', { caching: false, budget: true });

console.log(`Anthropic fake, ${model}, ${cached.turns.length} turns, ${OUTPUT_CHARS} chars of tool output per turn\n`);
console.log('turn  input(no cache)  billed(cache)  cache read  cache write');
for (const [i, t] of cached.turns.entries()) {
  const base = uncached.turns[i]?.usage.inputTokens ?? 0;
  console.log(
    `${String(i + 1).padStart(4)}  ${fmt(base).padStart(15)}  ${fmt(billed(t)).padStart(13)}  ${fmt(t.usage.cacheReadTokens).padStart(10)}  ${fmt(t.usage.cacheWriteTokens).padStart(11)}`,
  );
}
const totalInput = sum(cached.turns.map((t) => t.usage.inputTokens));
const totalRead = sum(cached.turns.map((t) => t.usage.cacheReadTokens));
const billedNoCache = sum(uncached.turns.map((t) => t.usage.inputTokens));
const billedCache = sum(cached.turns.map(billed));
console.log(`\nfraction of input tokens served from cache: ${(totalRead / totalInput).toFixed(3)}`);
console.log(
  `billed input (base-price token equivalents): without caching ${fmt(billedNoCache)}, with caching ${fmt(billedCache)} (ratio ${(billedCache / billedNoCache).toFixed(3)})`,
);
const history = sum(cached.turns.map((t) => t.usage.inputTokens)) / cached.turns.length;
console.log(
  `mean prompt size ${fmt(history)} tokens; each history token billed ≈ ${(billedCache / totalInput).toFixed(3)}× per turn it is resent`,
);

console.log('\nwhole session, total tokens (input + output):');
for (const r of [uncached, cached, budgetedNoCache, budgeted]) {
  const input = sum(r.turns.map((t) => t.usage.inputTokens));
  const output = sum(r.turns.map((t) => t.usage.outputTokens));
  const cost = sum(r.turns.map((t) => estimateCostUsd(model, t.usage) ?? 0));
  console.log(
    `  ${r.label.padEnd(40)} input ${fmt(input).padStart(11)}  billed ${fmt(sum(r.turns.map(billed))).padStart(11)}  output ${fmt(output).padStart(7)}  est. $${cost.toFixed(2)}`,
  );
}
const plainInput = sum(uncached.turns.map((t) => t.usage.inputTokens));
const budgetInput = sum(budgetedNoCache.turns.map((t) => t.usage.inputTokens));
console.log(
  `truncation + compaction: input tokens ${fmt(budgetInput)} vs ${fmt(plainInput)} without (ratio ${(budgetInput / plainInput).toFixed(3)}); the summarize() calls' own tokens are not counted (the bench summarizes without a model)`,
);
