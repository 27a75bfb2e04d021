import { describe, expect, it } from 'vitest';
import { type ClaudeStreamState, translateClaudeLine } from '../../src/engines/claude-stream.ts';
import { chooseEngine } from '../../src/engines/engine-choice.ts';
import { engineQuestion } from '../../src/engines/engine-transcript.ts';
import { meterAnswer } from '../../src/engines/relay-metering.ts';

describe('which engine a session runs', () => {
  it.each([
    ['with codex: fix the test', undefined, 'patchbay', { engine: 'codex', source: 'request' }],
    [
      'please fix it, using Claude Code: carefully',
      undefined,
      'patchbay',
      { engine: 'claude-code', source: 'request' },
    ],
    ['fix the test', 'opencode', 'patchbay', { engine: 'opencode', source: 'repository' }],
    ['with patchbay: fix it', 'claude-code', 'codex', { engine: 'patchbay', source: 'request' }],
    ['fix it with codex', undefined, 'claude-code', { engine: 'claude-code', source: 'installation' }],
    ['with gpt: fix it', undefined, 'patchbay', { engine: 'patchbay', source: 'installation' }],
  ] as const)('%s (repository %s, installation %s)', (prompt, repository, installation, expected) => {
    expect(chooseEngine(prompt, repository, installation)).toEqual(expected);
  });
});

describe("an engine's question", () => {
  it.each([
    ['Two fit.\nQUESTION: NOTES.md or notes.txt?', 'NOTES.md or notes.txt?'],
    ['QUESTION: which one?\nDone anyway.', undefined],
    ['All done.', undefined],
    ['QUESTION:   ', undefined],
  ])('%j', (text, expected) => expect(engineQuestion(text)).toBe(expected));
});

describe("Claude Code's stream-json lines", () => {
  const state = (): ClaudeStreamState => ({ turn: 4, tools: new Map(), now: () => 1000 });

  it('turns text and tool uses into events, and results into tool-end with the tool name', () => {
    const s = state();
    const assistant = translateClaudeLine(
      JSON.stringify({
        type: 'assistant',
        uuid: 'u1',
        message: {
          content: [
            { type: 'text', text: 'Looking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
          ],
        },
      }),
      s,
    );
    expect(assistant).toEqual({
      kind: 'events',
      texts: ['Looking.'],
      events: [
        { event: { type: 'assistant-message', text: 'Looking.', turn: 4 }, dedupeKey: 'engine-text:u1:0' },
        {
          event: { type: 'tool-start', callId: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
          dedupeKey: 'tool-start:toolu_1',
        },
      ],
    });
    const result = translateClaudeLine(
      JSON.stringify({
        type: 'user',
        message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt', is_error: false }] },
      }),
      s,
    );
    expect(result).toEqual({
      kind: 'events',
      texts: [],
      events: [
        {
          event: { type: 'tool-end', callId: 'toolu_1', name: 'Bash', isError: false, output: 'a.txt', durationMs: 0 },
          dedupeKey: 'tool-end:toolu_1',
        },
      ],
    });
  });

  it('reads the session id, the result, and ignores what is not its JSON', () => {
    const s = state();
    expect(translateClaudeLine('{"type":"system","subtype":"init","session_id":"abc"}', s)).toEqual({
      kind: 'session',
      engineSessionId: 'abc',
    });
    expect(
      translateClaudeLine(
        '{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"abc"}',
        s,
      ),
    ).toEqual({
      kind: 'result',
      ok: true,
      text: 'Done.',
      engineSessionId: 'abc',
    });
    expect(
      translateClaudeLine('{"type":"result","subtype":"error_during_execution","is_error":true}', s),
    ).toMatchObject({ kind: 'result', ok: false });
    expect(translateClaudeLine('not json', s)).toEqual({ kind: 'ignored' });
    expect(translateClaudeLine('{"type":"assistant","message":"no"}', s)).toEqual({ kind: 'ignored' });
  });
});

describe('metering answers', () => {
  it('reads Anthropic streams and messages, OpenAI Responses and Chat Completions', () => {
    const sse = [
      'event: message_start',
      'data: {"type":"message_start","message":{"model":"claude-sonnet-4-6","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":1}}}',
      '',
      'event: message_delta',
      'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}',
      '',
    ].join('\n');
    expect(meterAnswer('anthropic', sse, 'x')).toEqual({
      model: 'claude-sonnet-4-6',
      usage: { inputTokens: 115, outputTokens: 42, cacheReadTokens: 100, cacheWriteTokens: 5 },
      toolCalls: 0,
    });
    expect(meterAnswer('anthropic', '{"model":"m","usage":{"input_tokens":3,"output_tokens":4}}', 'x')).toEqual({
      model: 'm',
      usage: { inputTokens: 3, outputTokens: 4, cacheReadTokens: 0, cacheWriteTokens: 0 },
      toolCalls: 0,
    });
    const responses =
      'event: response.completed\ndata: {"type":"response.completed","response":{"model":"gpt-5","usage":{"input_tokens":50,"output_tokens":7,"input_tokens_details":{"cached_tokens":20}}}}\n\n';
    expect(meterAnswer('openai', responses, 'x')).toEqual({
      model: 'gpt-5',
      usage: { inputTokens: 50, outputTokens: 7, cacheReadTokens: 20, cacheWriteTokens: 0 },
      toolCalls: 0,
    });
    expect(
      meterAnswer('openai', '{"model":"gpt-4o","usage":{"prompt_tokens":9,"completion_tokens":2}}', 'x')?.usage
        .outputTokens,
    ).toBe(2);
    expect(meterAnswer('anthropic', '{"type":"error","error":{"type":"x"}}', 'x')).toBeUndefined();
  });
});
