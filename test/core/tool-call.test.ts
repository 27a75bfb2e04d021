import { describe, expect, it } from 'vitest';
import { describeToolCall } from '../../src/core/tool-call.ts';

describe('describeToolCall', () => {
  const cases: [string, string, unknown, { maxDetail?: number }, { action: string; detail: string }][] = [
    [
      'a shell command, first line only',
      'run_shell',
      { command: 'npm test\nnpm run lint' },
      {},
      { action: 'Ran', detail: 'npm test' },
    ],
    ['a path', 'read_file', { path: 'src/app.ts' }, {}, { action: 'Read', detail: 'src/app.ts' }],
    ['a search query', 'search', { query: 'TODO', path: 'src' }, {}, { action: 'Searched', detail: 'src' }],
    ['a pattern when there is no path', 'search', { pattern: 'TODO' }, {}, { action: 'Searched', detail: 'TODO' }],
    ['a question', 'ask_user', { question: 'Which file?' }, {}, { action: 'Asked', detail: 'Which file?' }],
    ['no input', 'git_status', undefined, {}, { action: 'Git status', detail: '' }],
    ['an input that is not an object', 'git_diff', 'HEAD', {}, { action: 'Git diff', detail: '' }],
    ['a tool without a verb keeps its name', 'mcp_lookup', { query: 'x' }, {}, { action: 'mcp_lookup', detail: 'x' }],
    [
      'clipped with an ellipsis',
      'run_shell',
      { command: 'a'.repeat(30) },
      { maxDetail: 10 },
      { action: 'Ran', detail: `${'a'.repeat(9)}…` },
    ],
    [
      'exactly the limit is not clipped',
      'run_shell',
      { command: 'a'.repeat(10) },
      { maxDetail: 10 },
      { action: 'Ran', detail: 'a'.repeat(10) },
    ],
  ];
  it.each(cases)('%s', (_name, tool, input, options, expected) => {
    expect(describeToolCall(tool, input, options)).toEqual({ name: tool, ...expected });
  });
});
