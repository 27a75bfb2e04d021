import { z } from 'zod';
import type { NewEvent } from '../core/run-log.ts';
import { clipOutput, type EngineStreamStep, parseJsonLine, workspacePath } from './engine-stream.ts';

/**
 * `opencode run --format json` lines (one JSON object each, recorded in test/fixtures/engines), as
 * far as Patchbay reads them. OpenCode reports a tool when it has finished, with its input, output
 * and times. The stream comes out of the sandbox, so it is parsed, never trusted.
 */
const ToolState = z.object({
  status: z.string(),
  input: z.record(z.string(), z.unknown()).optional(),
  output: z.string().optional(),
  error: z.string().optional(),
  title: z.string().optional(),
  metadata: z
    .object({
      exit: z.number().int().nullish(),
      files: z
        .array(z.object({ filePath: z.string(), relativePath: z.string().optional(), type: z.string() }))
        .optional(),
    })
    .passthrough()
    .optional(),
  time: z.object({ start: z.number(), end: z.number().optional() }).optional(),
});

const OpencodeLine = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('text'),
    sessionID: z.string(),
    part: z.object({ id: z.string(), text: z.string() }).passthrough(),
  }),
  z.object({
    type: z.literal('tool_use'),
    sessionID: z.string(),
    part: z.object({ id: z.string(), tool: z.string(), state: ToolState }).passthrough(),
  }),
  z.object({ type: z.literal('step_start'), sessionID: z.string() }).passthrough(),
  z.object({ type: z.literal('step_finish'), sessionID: z.string() }).passthrough(),
  z.object({ type: z.literal('reasoning'), sessionID: z.string() }).passthrough(),
  z.object({
    type: z.literal('error'),
    sessionID: z.string().optional(),
    error: z
      .object({ name: z.string(), data: z.object({ message: z.string() }).passthrough().optional() })
      .passthrough(),
  }),
]);

/** What the translation keeps between lines: the session seen, the turn count, the last text and whether it failed. */
export type OpencodeStreamState = {
  turn: number;
  workdir: string;
  sessionId: string | undefined;
  lastText: string;
  error: string | undefined;
};

/**
 * Parses one line of OpenCode's JSON output into session events. The first line that names the
 * session yields it (to resume); OpenCode has no closing line, so the run's end is `opencodeResult`
 * once the process exits. Pure but for `state`.
 */
export function translateOpencodeLine(line: string, state: OpencodeStreamState): EngineStreamStep[] {
  const parsed = OpencodeLine.safeParse(parseJsonLine(line));
  if (!parsed.success) return [];
  const msg = parsed.data;
  const steps: EngineStreamStep[] = [];
  if (msg.sessionID && !state.sessionId) {
    state.sessionId = msg.sessionID;
    steps.push({ kind: 'session', engineSessionId: msg.sessionID });
  }
  switch (msg.type) {
    case 'text': {
      if (!msg.part.text.trim()) break;
      state.lastText = msg.part.text;
      const event: NewEvent = {
        event: { type: 'assistant-message', text: msg.part.text, turn: state.turn },
        dedupeKey: `engine-text:${msg.part.id}`,
      };
      steps.push({ kind: 'events', events: [event], texts: [msg.part.text] });
      break;
    }
    case 'tool_use':
      steps.push({ kind: 'events', events: toolEvents(msg.part, state), texts: [] });
      break;
    case 'step_finish':
      state.turn++;
      break;
    case 'error':
      state.error = msg.error.data?.message ?? msg.error.name;
      break;
    case 'step_start':
    case 'reasoning':
      break;
    default: {
      const _never: never = msg;
      return _never;
    }
  }
  return steps;
}

/** How the run ended, once OpenCode has exited: its last text, or the error it reported; undefined when it never started. Pure. */
export function opencodeResult(state: OpencodeStreamState, exitCode: number): EngineStreamStep | undefined {
  // No line named a session: OpenCode never started one (it printed why on stderr, for instance "Session not found").
  if (!state.sessionId) return undefined;
  if (state.error) return { kind: 'result', ok: false, text: state.error };
  if (exitCode !== 0) return { kind: 'result', ok: false, text: `OpenCode exited with code ${exitCode}` };
  return { kind: 'result', ok: true, text: state.lastText };
}

type ToolPart = { id: string; tool: string; state: z.infer<typeof ToolState> };

/** One finished tool as its start and end: commands as `run_shell`, edits as one `edit_file` per file. */
function toolEvents(part: ToolPart, state: OpencodeStreamState): NewEvent[] {
  const { state: tool } = part;
  const failed = tool.status === 'error' || (tool.metadata?.exit ?? 0) !== 0;
  const durationMs = tool.time?.end ? Math.max(0, tool.time.end - tool.time.start) : 0;
  const output = clipOutput(tool.status === 'error' ? (tool.error ?? 'failed') : (tool.output ?? ''));
  const files = tool.metadata?.files ?? editedFile(part);
  if (files.length > 0)
    return files.flatMap((f, i) => {
      const path = f.relativePath ?? workspacePath(f.filePath, state.workdir);
      return pair(`${part.id}.${i}`, 'edit_file', { path, change: f.type }, failed, output, durationMs);
    });
  const { name, input } = shownAs(part.tool, tool.input ?? {}, state.workdir);
  const shownOutput = part.tool === 'bash' && failed ? `${output}\n(exit code ${tool.metadata?.exit})` : output;
  return pair(part.id, name, input, failed, shownOutput.trimStart(), durationMs);
}

/** The file an `edit`/`write` call names (apply_patch lists its files in metadata). */
function editedFile(part: ToolPart): { filePath: string; relativePath?: string; type: string }[] {
  const path = part.state.input?.filePath;
  if ((part.tool !== 'edit' && part.tool !== 'write') || typeof path !== 'string') return [];
  return [{ filePath: path, type: part.tool === 'write' ? 'write' : 'update' }];
}

/** OpenCode's tools under the names every surface describes (run_shell, read_file, search, list_files). */
function shownAs(tool: string, input: Record<string, unknown>, workdir: string): { name: string; input: unknown } {
  const path = (key: string) => (typeof input[key] === 'string' ? workspacePath(input[key], workdir) : undefined);
  switch (tool) {
    case 'bash':
      return { name: 'run_shell', input: { command: input.command } };
    case 'read':
      return { name: 'read_file', input: { path: path('filePath') } };
    case 'grep':
      return { name: 'search', input: { pattern: input.pattern, path: path('path') } };
    case 'glob':
      return { name: 'list_files', input: { pattern: input.pattern, path: path('path') } };
    default:
      return { name: tool, input };
  }
}

function pair(id: string, name: string, input: unknown, isError: boolean, output: string, durationMs: number) {
  const callId = `opencode:${id}`;
  return [
    { event: { type: 'tool-start' as const, callId, name, input }, dedupeKey: `tool-start:${callId}` },
    {
      event: { type: 'tool-end' as const, callId, name, isError, output, durationMs },
      dedupeKey: `tool-end:${callId}`,
    },
  ];
}
