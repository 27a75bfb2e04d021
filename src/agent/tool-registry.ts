import { z } from 'zod';
import type { ArtifactStore } from '../core/artifact-store.ts';
import type { PictureFitter } from '../core/image-format.ts';
import { PatchbayError } from '../core/errors.ts';
import type { Logger } from 'pino';
import type { ModelImage, ToolCall, ToolSpec } from '../models/model-provider.ts';
import { capText, DEFAULT_MAX_OUTPUT_CHARS, GENERIC_CUT_HINT } from './output-cap.ts';
import type { AnyTool, ToolContext, ToolOutput } from './tool.ts';

export type ToolRegistryOptions = {
  /** Cap on any tool's content handed back to the model, when the context names none. Default 30,000 characters. */
  maxOutputChars?: number;
  /**
   * How long a call may take before it is abandoned with an error result (the tool's signal is
   * aborted too), unless the tool sets its own limit. Default 2 minutes.
   */
  callTimeLimitMs?: number;
  /** Where tools keep the pictures they take with the session: handed to every call's context. */
  artifacts?: ArtifactStore;
  /** Scales the pictures tools hand back before they join the transcript; without it they go as taken. */
  pictures?: PictureFitter;
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
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const callTimeLimitMs = options.callTimeLimitMs ?? 120_000;
  const { artifacts } = options;
  const byName = new Map<string, AnyTool>();
  for (const tool of tools) {
    if (!TOOL_NAME.test(tool.name))
      throw new PatchbayError('config_invalid', `tool name ${JSON.stringify(tool.name)} must match ${TOOL_NAME}`);
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
      if (!tool)
        return { content: `Unknown tool "${call.name}". Available tools: ${names.join(', ')}.`, isError: true };
      if (ctx.signal.aborted) return { content: `${call.name} was not run: the run was stopped.`, isError: true };
      const parsed = await tool.inputSchema.safeParseAsync(normalizeInput(call.input));
      if (!parsed.success) {
        return {
          content: `Invalid input for ${call.name}:\n${describeIssues(parsed.error.issues)}\nFix the input and call the tool again.`,
          isError: true,
        };
      }
      const log = ctx.log.child({ tool: call.name, toolCallId: call.id });
      const started = Date.now();
      const limitMs = tool.timeLimitMs?.(parsed.data) ?? callTimeLimitMs;
      const limit = ctx.maxOutputChars ?? maxOutputChars;
      const timeout = AbortSignal.timeout(limitMs);
      const signal = AbortSignal.any([ctx.signal, timeout]);
      let output: ToolOutput;
      try {
        output = await abandonOnAbort(
          tool.execute(parsed.data, {
            ...ctx,
            log,
            signal,
            maxOutputChars: limit,
            artifacts: ctx.artifacts ?? artifacts,
          }),
          signal,
        );
      } catch (error) {
        if (error === ABANDONED) {
          output = ctx.signal.aborted
            ? { content: `${call.name} was stopped before it finished: the run was stopped.`, isError: true }
            : { content: `${call.name} did not finish within ${formatMs(limitMs)} and was abandoned.`, isError: true };
          // A stop or a shutdown abandons calls on purpose; only a call past its time limit is worth a warning.
          if (ctx.signal.aborted) log.info({ limitMs, stopped: true }, 'tool call abandoned');
          else log.warn({ limitMs, stopped: false }, 'tool call abandoned');
        } else {
          output = errorOutput(call.name, error, log);
        }
      }
      log.debug(
        { ms: Date.now() - started, isError: output.isError ?? false, chars: output.content.length },
        'tool finished',
      );
      if (options.pictures && output.images?.length) output = await fitPictures(output, options.pictures, log);
      // The one cut of a tool's output: tools that cut for themselves stay within the limit.
      const { cutHint, ...rest } = output;
      return { ...rest, content: capText(output.content, limit, cutHint ?? GENERIC_CUT_HINT) };
    },
  };
}

/**
 * A tool's pictures as the model gets them: each over the fitter's side scaled down (a 3840×4096
 * screenshot, a full page of any height), so no picture the agent takes breaks the API's size
 * rules (8000 px a side, 2000 px past 20 pictures a request) however many the transcript gathers.
 * One that cannot be read is left out, and the result says so.
 */
async function fitPictures(output: ToolOutput, fitter: PictureFitter, log: Logger): Promise<ToolOutput> {
  const images: ModelImage[] = [];
  const notes: string[] = [];
  for (const image of output.images ?? []) {
    const { width, height } = image;
    if (width && height && Math.max(width, height) <= fitter.maxSide) {
      images.push(image);
      continue;
    }
    const fitted = await fitter.fit(Buffer.from(image.data, 'base64'), image.mediaType);
    if ('unfit' in fitted) {
      log.warn({ reason: fitted.unfit }, 'a picture from a tool could not be scaled');
      notes.push(`The picture ${image.name} could not be shown: ${fitted.unfit}.`);
      continue;
    }
    const { bytes, ...size } = fitted;
    images.push({ ...image, ...size, data: Buffer.from(bytes).toString('base64') });
  }
  const { images: _taken, ...rest } = output;
  const content = [output.content, ...notes].filter(Boolean).join('\n');
  return { ...rest, content, ...(images.length > 0 && { images }) };
}

function toSpec(tool: AnyTool): ToolSpec {
  // io 'input': optional and defaulted fields are not required of the caller.
  const { $schema: _schema, ...schema } = z.toJSONSchema(tool.inputSchema, {
    io: 'input',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  if (schema.type !== 'object')
    throw new PatchbayError('config_invalid', `tool ${tool.name}: input schema must be an object`);
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: { ...schema, properties: schema.properties ?? {} },
  };
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

const ABANDONED = Symbol('abandoned');

/** How long a tool whose signal fired may take to finish with its own result before it is abandoned. */
const ABORT_GRACE_MS = 5_000;

/**
 * Settles with `work`; once `signal` aborts, the tool (which got the signal) has a short grace to
 * settle with its own result (a killed command reports itself), after which this rejects with
 * ABANDONED: a call stuck in the kernel or an unresponsive service cannot hold the run. A late
 * outcome is dropped.
 */
function abandonOnAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      grace = setTimeout(() => reject(ABANDONED), ABORT_GRACE_MS);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(grace);
    };
    work.then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
