import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { PatchbayError } from '../../../src/core/errors.ts';
import { createDefaultTools } from '../../../src/agent/default-tools.ts';
import type { Tool } from '../../../src/agent/tool.ts';
import { createToolRegistry } from '../../../src/agent/tool-registry.ts';
import { createToolTestSandbox, type ToolTestSandbox } from './tool-test-sandbox.ts';

const echoTool: Tool<{ text: string; times?: number | undefined; nested: { flag: boolean } }> = {
  name: 'echo',
  description: 'Repeats text.',
  inputSchema: z.object({
    text: z.string().min(1),
    times: z.number().int().positive().optional(),
    nested: z.object({ flag: z.boolean() }),
  }),
  async execute(input) {
    return { content: input.text.repeat(input.times ?? 1) };
  },
};

const throwingTool = (error: unknown): Tool<Record<string, never>> => ({
  name: 'boom',
  description: 'Always throws.',
  inputSchema: z.object({}),
  async execute() {
    throw error;
  },
});

describe('tool registry', () => {
  let box: ToolTestSandbox;
  beforeAll(async () => {
    box = await createToolTestSandbox('registry-test');
  });
  afterAll(async () => {
    await box.cleanup();
  });

  it('returns an error result naming the known tools for an unknown tool', async () => {
    const registry = createToolRegistry([echoTool, throwingTool(new Error('x'))]);
    const output = await registry.execute({ id: '1', name: 'delete_repo', input: {} }, box.ctx());
    expect(output).toEqual({ isError: true, content: 'Unknown tool "delete_repo". Available tools: echo, boom.' });
  });

  it('turns zod issues into one readable line per field', async () => {
    const registry = createToolRegistry([echoTool]);
    const output = await registry.execute(
      { id: '1', name: 'echo', input: { text: 3, times: -1, nested: {} } },
      box.ctx(),
    );
    expect(output.isError).toBe(true);
    expect(output.content.split('\n')).toEqual([
      'Invalid input for echo:',
      '- text: Invalid input: expected string, received number',
      '- times: Too small: expected number to be >0',
      '- nested.flag: Invalid input: expected boolean, received undefined',
      'Fix the input and call the tool again.',
    ]);
  });

  it('reports a non-object input at the top level', async () => {
    const registry = createToolRegistry([echoTool]);
    const output = await registry.execute({ id: '1', name: 'echo', input: [1, 2] }, box.ctx());
    expect(output.content).toContain('- (input): Invalid input: expected object, received array');
  });

  it('accepts arguments sent as a JSON string', async () => {
    const registry = createToolRegistry([echoTool]);
    const output = await registry.execute(
      { id: '1', name: 'echo', input: '{"text":"ab","times":2,"nested":{"flag":true}}' },
      box.ctx(),
    );
    expect(output).toEqual({ content: 'abab' });
  });

  it('shows a PatchbayError message and summarizes other throws, never throwing itself', async () => {
    const coded = createToolRegistry([
      throwingTool(new PatchbayError('path_refused', 'path refused: "/etc" is outside the workspace')),
    ]);
    expect(await coded.execute({ id: '1', name: 'boom', input: {} }, box.ctx())).toEqual({
      isError: true,
      content: 'path refused: "/etc" is outside the workspace',
    });
    const unknown = createToolRegistry([
      throwingTool(new TypeError('cannot read properties of undefined\n    at secret/stack.ts:1')),
    ]);
    expect(await unknown.execute({ id: '1', name: 'boom', input: {} }, box.ctx())).toEqual({
      isError: true,
      content: 'boom failed unexpectedly: cannot read properties of undefined',
    });
    const weird = createToolRegistry([throwingTool('a string')]);
    expect((await weird.execute({ id: '1', name: 'boom', input: {} }, box.ctx())).content).toBe(
      'boom failed unexpectedly: a string',
    );
  });

  it('does not run a tool once the run is aborted', async () => {
    const registry = createToolRegistry([echoTool]);
    const controller = new AbortController();
    controller.abort();
    const output = await registry.execute(
      { id: '1', name: 'echo', input: { text: 'x', nested: { flag: true } } },
      box.ctx(controller.signal),
    );
    expect(output).toEqual({ isError: true, content: 'echo was not run: the run was stopped.' });
  });

  it('caps the content handed back, saying how much was cut', async () => {
    const registry = createToolRegistry([echoTool], { maxOutputChars: 1_000 });
    const output = await registry.execute(
      { id: '1', name: 'echo', input: { text: 'line of text\n', times: 500, nested: { flag: true } } },
      box.ctx(),
    );
    expect(output.content.length).toBeLessThanOrEqual(1_000);
    expect(output.content).toMatch(
      /\[\.\.\. \d+ characters \(\d+ lines\) cut from the middle of 6500; ask for a smaller part/,
    );
    expect(output.content.startsWith('line of text\n')).toBe(true);
    expect(output.content.endsWith('line of text\n')).toBe(true);
  });

  it('refuses duplicate and malformed tool names at construction', () => {
    expect(() => createToolRegistry([echoTool, echoTool])).toThrow(/two tools are named echo/);
    expect(() => createToolRegistry([{ ...echoTool, name: 'has space' }])).toThrow(/must match/);
  });

  it('publishes object JSON Schemas without $schema, optional fields not required', () => {
    const specs = createToolRegistry(createDefaultTools()).specs();
    expect(specs.map((s) => s.name)).toEqual([
      'read_file',
      'write_file',
      'edit_file',
      'list_files',
      'search',
      'run_shell',
      'git_status',
      'git_diff',
      'screenshot',
      'process_start',
      'process_output',
      'process_stop',
      'process_list',
      'browser_open',
      'browser_snapshot',
      'browser_click',
      'browser_type',
      'browser_select',
      'browser_wait_for',
      'browser_console',
      'browser_screenshot',
      'ask_user',
    ]);
    for (const spec of specs) {
      expect(spec.inputSchema.type).toBe('object');
      expect(spec.inputSchema).not.toHaveProperty('$schema');
      expect(spec.inputSchema.properties).toBeTypeOf('object');
      expect(spec.description.length).toBeGreaterThan(20);
    }
    const edit = specs.find((s) => s.name === 'edit_file')!;
    expect(edit.inputSchema.required).toEqual(['path', 'old_string', 'new_string']);
    expect(specs.find((s) => s.name === 'git_status')!.inputSchema).toEqual({ type: 'object', properties: {} });
  });

  it('abandons a call that outlives its time limit, and a stop ends a hanging call, each with an error result', async () => {
    let seenSignal: AbortSignal | undefined;
    const hanging: Tool<Record<string, never>> = {
      name: 'hang',
      description: 'Never returns.',
      inputSchema: z.object({}),
      execute: (_input, ctx) => {
        seenSignal = ctx.signal;
        return new Promise(() => undefined);
      },
    };
    const registry = createToolRegistry([hanging], { callTimeLimitMs: 50 });
    expect(await registry.execute({ id: 'h1', name: 'hang', input: {} }, box.ctx())).toEqual({
      isError: true,
      content: 'hang did not finish within 50 ms and was abandoned.',
    });
    // The tool's own signal was aborted too, so its work can stop.
    expect(seenSignal?.aborted).toBe(true);

    const patient = createToolRegistry([hanging], { callTimeLimitMs: 3_600_000 });
    const stop = new AbortController();
    const pending = patient.execute({ id: 'h2', name: 'hang', input: {} }, box.ctx(stop.signal));
    await vi.waitFor(() => expect(seenSignal?.aborted).toBe(false));
    stop.abort();
    expect(await pending).toEqual({
      isError: true,
      content: 'hang was stopped before it finished: the run was stopped.',
    });
  });
});
