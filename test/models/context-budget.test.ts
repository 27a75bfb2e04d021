import { describe, expect, it } from 'vitest';
import { compactTranscript, estimateMessageTokens, summaryPrefix } from '../../src/models/context-budget.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';

const user = (content: string): ModelMessage => ({ role: 'user', content });
const assistantCall = (id: string): ModelMessage => ({
  role: 'assistant',
  content: 'calling',
  toolCalls: [{ id, name: 'run', input: {} }],
});
const tool = (id: string, content: string): ModelMessage => ({
  role: 'tool',
  toolCallId: id,
  name: 'run',
  content,
  isError: false,
});

describe('compactTranscript', () => {
  const estimateTokens = (m: ModelMessage) => (m.role === 'assistant' ? 10 : m.content.length);

  it('does nothing below the threshold', async () => {
    const messages = [user('x'.repeat(10)), assistantCall('a'), tool('a', 'y'.repeat(10))];
    const result = await compactTranscript(messages, {
      contextWindow: 1000,
      estimateTokens,
      summarize: () => Promise.reject(new Error('not called')),
    });
    expect(result).toEqual({ messages, replaced: 0 });
  });

  it('replaces older turns by one summary message and never separates a tool call from its results', async () => {
    const messages: ModelMessage[] = [user('task '.repeat(20))];
    for (let i = 0; i < 10; i++) messages.push(assistantCall(`c${i}`), tool(`c${i}`, 'o'.repeat(90)));
    let summarized: readonly ModelMessage[] = [];
    const result = await compactTranscript(messages, {
      contextWindow: 1000,
      estimateTokens,
      summarize: async (older) => {
        summarized = older;
        return 'did 7 runs';
      },
    });
    expect(result.replaced).toBeGreaterThan(0);
    expect(result.summary).toBe('did 7 runs');
    expect(result.messages[0]).toEqual({ role: 'user', content: `${summaryPrefix}\ndid 7 runs` });
    expect(summarized).toEqual(messages.slice(0, result.replaced));
    expect(result.messages.slice(1)).toEqual(messages.slice(result.replaced));
    expect(result.messages[1]?.role).toBe('assistant');
    const total = result.messages.reduce((n, m) => n + estimateTokens(m), 0);
    expect(total).toBeLessThan(750);
  });

  it('moves the cut before a run of tool results that belong to one assistant call', async () => {
    const many: ModelMessage[] = [
      user('u'.repeat(400)),
      {
        role: 'assistant',
        toolCalls: [
          { id: 'a', name: 'run', input: {} },
          { id: 'b', name: 'run', input: {} },
          { id: 'c', name: 'run', input: {} },
        ],
      },
      tool('a', 'x'.repeat(300)),
      tool('b', 'x'.repeat(100)),
      tool('c', 'x'.repeat(100)),
    ];
    const result = await compactTranscript(many, { contextWindow: 1000, estimateTokens, summarize: async () => 's' });
    expect(result.replaced).toBe(1);
    expect(result.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'tool']);
  });

  it('gives up rather than split when the only cut would separate calls from results', async () => {
    const messages: ModelMessage[] = [assistantCall('a'), tool('a', 'x'.repeat(5000))];
    const result = await compactTranscript(messages, {
      contextWindow: 1000,
      estimateTokens,
      summarize: async () => 's',
    });
    expect(result.replaced).toBe(0);
    expect(result.messages).toEqual(messages);
  });

  it('estimates tokens at about four characters each', () => {
    expect(estimateMessageTokens(user('x'.repeat(400)))).toBe(104);
  });
});
