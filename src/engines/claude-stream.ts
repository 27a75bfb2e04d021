import { z } from 'zod';
import type { NewEvent } from '../core/run-log.ts';

/**
 * Claude Code's `--output-format stream-json` lines (one JSON object each), as far as Patchbay
 * reads them. The stream comes out of the sandbox, so it is parsed, never trusted.
 */
const TextBlock = z.object({ type: z.literal('text'), text: z.string() });
const ToolUseBlock = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });
const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z
    .union([z.string(), z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough())])
    .optional(),
  is_error: z.boolean().optional(),
});
const AnyBlock = z.object({ type: z.string() }).passthrough();

const StreamLine = z.discriminatedUnion('type', [
  z.object({ type: z.literal('system'), subtype: z.string(), session_id: z.string().optional() }).passthrough(),
  z
    .object({
      type: z.literal('assistant'),
      uuid: z.string().optional(),
      session_id: z.string().optional(),
      parent_tool_use_id: z.string().nullish(),
      message: z.object({ id: z.string().optional(), content: z.array(AnyBlock) }).passthrough(),
    })
    .passthrough(),
  z
    .object({
      type: z.literal('user'),
      uuid: z.string().optional(),
      parent_tool_use_id: z.string().nullish(),
      message: z.object({ content: z.union([z.string(), z.array(AnyBlock)]) }).passthrough(),
    })
    .passthrough(),
  z
    .object({
      type: z.literal('result'),
      subtype: z.string(),
      is_error: z.boolean().optional(),
      result: z.string().optional(),
      session_id: z.string().optional(),
    })
    .passthrough(),
]);

/** What one line of the stream means for the session. */
export type ClaudeStreamStep =
  | { kind: 'session'; engineSessionId: string }
  | { kind: 'events'; events: NewEvent[]; texts: string[] }
  | { kind: 'result'; ok: boolean; text: string; engineSessionId?: string | undefined }
  | { kind: 'ignored' };

/** What the translation keeps between lines: tool names by call id, the turn count and when each call started. */
export type ClaudeStreamState = {
  turn: number;
  tools: Map<string, { name: string; startedAt: number }>;
  now: () => number;
};

/** Parses one line of the stream into session events. Lines that are not JSON or not read here are ignored. Pure but for `state`. */
export function translateClaudeLine(line: string, state: ClaudeStreamState): ClaudeStreamStep {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { kind: 'ignored' };
  }
  const parsed = StreamLine.safeParse(raw);
  if (!parsed.success) return { kind: 'ignored' };
  const msg = parsed.data;
  switch (msg.type) {
    case 'system':
      return msg.subtype === 'init' && msg.session_id
        ? { kind: 'session', engineSessionId: msg.session_id }
        : { kind: 'ignored' };
    case 'assistant':
      return assistantEvents(msg.message.content, msg.uuid ?? msg.message.id ?? String(state.turn), state);
    case 'user':
      return typeof msg.message.content === 'string' ? { kind: 'ignored' } : toolResults(msg.message.content, state);
    case 'result':
      return {
        kind: 'result',
        ok: !msg.is_error && msg.subtype === 'success',
        text: msg.result ?? msg.subtype,
        engineSessionId: msg.session_id,
      };
    default: {
      const _never: never = msg;
      return _never;
    }
  }
}

function assistantEvents(blocks: z.infer<typeof AnyBlock>[], key: string, state: ClaudeStreamState): ClaudeStreamStep {
  const events: NewEvent[] = [];
  const texts: string[] = [];
  for (const [i, raw] of blocks.entries()) {
    const text = TextBlock.safeParse(raw);
    if (text.success && text.data.text.trim()) {
      texts.push(text.data.text);
      events.push({
        event: { type: 'assistant-message', text: text.data.text, turn: state.turn },
        dedupeKey: `engine-text:${key}:${i}`,
      });
      continue;
    }
    const use = ToolUseBlock.safeParse(raw);
    if (use.success) {
      state.tools.set(use.data.id, { name: use.data.name, startedAt: state.now() });
      events.push({
        event: { type: 'tool-start', callId: use.data.id, name: use.data.name, input: use.data.input },
        dedupeKey: `tool-start:${use.data.id}`,
      });
    }
  }
  state.turn++;
  return { kind: 'events', events, texts };
}

function toolResults(blocks: z.infer<typeof AnyBlock>[], state: ClaudeStreamState): ClaudeStreamStep {
  const events: NewEvent[] = [];
  for (const raw of blocks) {
    const result = ToolResultBlock.safeParse(raw);
    if (!result.success) continue;
    const started = state.tools.get(result.data.tool_use_id);
    const content = result.data.content ?? '';
    const output = typeof content === 'string' ? content : content.map((c) => c.text ?? `[${c.type}]`).join('\n');
    events.push({
      event: {
        type: 'tool-end',
        callId: result.data.tool_use_id,
        name: started?.name ?? 'tool',
        isError: result.data.is_error ?? false,
        output:
          output.length > 4000 ? `${output.slice(0, 4000)}\n[... ${output.length - 4000} more characters]` : output,
        durationMs: started ? Math.max(0, state.now() - started.startedAt) : 0,
      },
      dedupeKey: `tool-end:${result.data.tool_use_id}`,
    });
  }
  return { kind: 'events', events, texts: [] };
}
