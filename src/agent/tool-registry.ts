import { z } from 'zod';
import { PatchbayError } from '../core/errors.ts';
import type { ToolCall, ToolSpec } from '../models/model-provider.ts';
import { capText, DEFAULT_MAX_OUTPUT_CHARS } from './output-cap.ts';
import type { AnyTool, ToolContext, ToolOutput } from './tool.ts';

export type ToolRegistryOptions = {
  /** Cap on any tool's content handed back to the model. Default 32,000 characters. */
  maxOutputChars?: number;
};

export type ToolRegistry = {
  readonly names: readonly string[];
  /** The tools as the model sees them: name, description, JSON Schema of the input. */
  specs(): ToolSpec[];
  /** Runs one call. Never throws: unknown tools, bad input and failures come back as error outputs. */
  execute(call: ToolCall, ctx: ToolContext): Promise<ToolOutput>;
};

// Anthropic and OpenAI both accept tool names of this shape.
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function createToolRegistry(tools: readonly AnyTool[], options: ToolRegistryOptions = {}): ToolRegistry {
  // A safety net above the tools' own caps, which cut more precisely and leave room for their notes.
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS + 2_000;
  const byName = new Map<string, AnyTool>();
  for (const tool of tools) {
    if (!TOOL_NAME.test(tool.name)) throw new PatchbayError('config_invalid', `tool name ${JSON.stringify(tool.name)} must match ${TOOL_NAME}`);
    if (byName.has(tool.name)) throw new PatchbayError('config_invalid', `two tools are named ${tool.name}`);
    byName.set(tool.name, tool);
  }
  const names = [...byName.keys()];
  const specs = tools.map(toSpec);

  return {
    names,
    specs: () => specs.map((spec) => ({ ...spec, inputSchema: structuredClone(spec.inputSchema) })),

    async execute(call, ctx) {
      const tool = byName.get(call.name);
      if (!tool) return { content: `Unknown tool "${call.name}". Available tools: ${names.join(', ')}.`, isError: true };
      if (ctx.signal.aborted) return { content: `${call.name} was not run: the run was stopped.`, isError: true };
      const parsed = await tool.inputSchema.safeParseAsync(normalizeInput(call.input));
      if (!parsed.success) {
        return { content: `Invalid input for ${call.name}:\n${describeIssues(parsed.error.issues)}\nFix the input and call the tool again.`, isError: true };
      }
      const log = ctx.log.child({ tool: call.name, toolCallId: call.id });
      const started = Date.now();
      let output: ToolOutput;
      try {
        output = await tool.execute(parsed.data, { ...ctx, log });
      } catch (error) {
        output = errorOutput(call.name, error, log);
      }
      log.debug({ ms: Date.now() - started, isError: output.isError ?? false, chars: output.content.length }, 'tool finished');
      return { ...output, content: capText(output.content, maxOutputChars, 'ask for a smaller part (a line range, a path, a narrower pattern)') };
    },
  };
}

function toSpec(tool: AnyTool): ToolSpec {
  // io 'input': optional and defaulted fields are not required of the caller.
  const { $schema: _schema, ...schema } = z.toJSONSchema(tool.inputSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  if (schema.type !== 'object') throw new PatchbayError('config_invalid', `tool ${tool.name}: input schema must be an object`);
  return { name: tool.name, description: tool.description, inputSchema: { ...schema, properties: schema.properties ?? {} } };
}

/** Models sometimes send arguments as a JSON string, or nothing for a tool without parameters. */
function normalizeInput(input: unknown): unknown {
  if (input === undefined || input === null) return {};
  if (typeof input === 'string') {
    try {
      return JSON.parse(input) as unknown;
    } catch {
      return input;
    }
  }
  return input;
}

/** One line per issue, "- path.to.field: message", the way the model can act on it. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const path = issue.path.length === 0 ? '(input)' : issue.path.map(String).join('.');
      return `- ${path}: ${issue.message}`;
    })
    .join('\n');
}

function errorOutput(name: string, error: unknown, log: ToolContext['log']): ToolOutput {
  if (error instanceof PatchbayError) return { content: error.message, isError: true };
  log.warn({ err: error }, 'tool threw an unexpected error');
  const message = error instanceof Error ? error.message : String(error);
  const firstLine = (message.split('\n')[0] ?? '').slice(0, 300);
  return { content: `${name} failed unexpectedly: ${firstLine || 'unknown error'}`, isError: true };
}
