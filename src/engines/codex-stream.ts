import { z } from 'zod';
import type { NewEvent } from '../core/run-log.ts';
import { clipOutput, type EngineStreamStep, parseJsonLine, workspacePath } from './engine-stream.ts';

/**
 * `codex exec --json` lines (one JSON object each, recorded in test/fixtures/engines), as far as
 * Patchbay reads them. The stream comes out of the sandbox, so it is parsed, never trusted.
 */
const CommandItem = z.object({
  id: z.string(),
  type: z.literal('command_execution'),
  command: z.string(),
  aggregated_output: z.string().optional(),
  exit_code: z.number().int().nullish(),
  status: z.string(),
});
const FileChangeItem = z.object({
  id: z.string(),
  type: z.literal('file_change'),
  changes: z.array(z.object({ path: z.string(), kind: z.string() })),
  status: z.string(),
});
const MessageItem = z.object({ id: z.string(), type: z.literal('agent_message'), text: z.string() });
/** MCP calls, web searches and the like: shown by their type. */
const OtherItem = z.object({ id: z.string(), type: z.string() }).passthrough();

const CodexLine = z.discriminatedUnion('type', [
  z.object({ type: z.literal('thread.started'), thread_id: z.string().min(1) }),
  z.object({ type: z.literal('item.started'), item: OtherItem }),
  z.object({ type: z.literal('item.updated'), item: OtherItem }),
  z.object({ type: z.literal('item.completed'), item: OtherItem }),
  z.object({ type: z.literal('turn.completed') }).passthrough(),
  z.object({ type: z.literal('turn.failed'), error: z.object({ message: z.string() }) }),
  z.object({ type: z.literal('turn.started') }),
  z.object({ type: z.literal('error'), message: z.string() }),
]);

/**
 * What the translation keeps between lines. `runKey` is fresh for each CLI run: Codex numbers its
 * items from item_0 again when a thread is resumed, so call ids and dedupe keys carry the run's key.
 */
export type CodexStreamState = {
  turn: number;
  workdir: string;
  runKey: string;
  started: Map<string, number>;
  lastText: string;
  now: () => number;
};

/** Parses one line of `codex exec --json` into session events. Pure but for `state`. */
export function translateCodexLine(line: string, state: CodexStreamState): EngineStreamStep {
  const parsed = CodexLine.safeParse(parseJsonLine(line));
  if (!parsed.success) return { kind: 'ignored' };
  const msg = parsed.data;
  switch (msg.type) {
    case 'thread.started':
      return { kind: 'session', engineSessionId: msg.thread_id };
    case 'item.started':
      return itemStarted(msg.item, state);
    case 'item.completed':
      return itemCompleted(msg.item, state);
    case 'turn.completed':
      return { kind: 'result', ok: true, text: state.lastText };
    case 'turn.failed':
      return { kind: 'result', ok: false, text: msg.error.message };
    // Progress of an item, a turn's start, and the reconnect notices Codex prints before it gives up.
    case 'item.updated':
    case 'turn.started':
    case 'error':
      return { kind: 'ignored' };
    default: {
      const _never: never = msg;
      return _never;
    }
  }
}

function itemStarted(item: z.infer<typeof OtherItem>, state: CodexStreamState): EngineStreamStep {
  if (item.type === 'agent_message' || item.type === 'reasoning' || item.type === 'error') return { kind: 'ignored' };
  if (state.started.has(item.id)) return { kind: 'ignored' };
  state.started.set(item.id, state.now());
  return { kind: 'events', events: toolStarts(item, state), texts: [] };
}

function itemCompleted(item: z.infer<typeof OtherItem>, state: CodexStreamState): EngineStreamStep {
  const message = MessageItem.safeParse(item);
  if (message.success) {
    state.lastText = message.data.text;
    const event: NewEvent = {
      event: { type: 'assistant-message', text: message.data.text, turn: state.turn },
      dedupeKey: `engine-text:${state.runKey}:${item.id}`,
    };
    state.turn++;
    return { kind: 'events', events: [event], texts: [message.data.text] };
  }
  if (item.type === 'reasoning' || item.type === 'error' || item.type === 'todo_list') return { kind: 'ignored' };
  // An item Codex reports only once it is done still gets its start, so the page pairs them.
  const starts = state.started.has(item.id) ? [] : toolStarts(item, state);
  const startedAt = state.started.get(item.id) ?? state.now();
  state.started.delete(item.id);
  return { kind: 'events', events: [...starts, ...toolEnds(item, state, state.now() - startedAt)], texts: [] };
}

/** A command is a `run_shell` step, a file change one `edit_file` step per file, anything else its own type. */
function toolStarts(item: z.infer<typeof OtherItem>, state: CodexStreamState): NewEvent[] {
  const command = CommandItem.safeParse(item);
  if (command.success) return [start(state, item.id, 'run_shell', { command: unwrapShell(command.data.command) })];
  const change = FileChangeItem.safeParse(item);
  if (change.success)
    return change.data.changes.map((c, i) =>
      start(state, `${item.id}.${i}`, 'edit_file', { path: workspacePath(c.path, state.workdir), change: c.kind }),
    );
  const { id: _id, type, ...input } = item;
  return [start(state, item.id, type, input)];
}

function toolEnds(item: z.infer<typeof OtherItem>, state: CodexStreamState, durationMs: number): NewEvent[] {
  const command = CommandItem.safeParse(item);
  if (command.success) {
    const { exit_code: exit, aggregated_output: output = '', status } = command.data;
    const failed = status === 'failed' || (exit !== null && exit !== undefined && exit !== 0);
    const text = failed && exit !== null && exit !== undefined ? `${output}\n(exit code ${exit})`.trimStart() : output;
    return [end(state, item.id, 'run_shell', failed, clipOutput(text), durationMs)];
  }
  const change = FileChangeItem.safeParse(item);
  if (change.success) {
    const failed = change.data.status !== 'completed';
    return change.data.changes.map((c, i) =>
      end(state, `${item.id}.${i}`, 'edit_file', failed, `${c.kind} ${workspacePath(c.path, state.workdir)}`, 0),
    );
  }
  const failed = item.status === 'failed' || item.error !== undefined;
  return [end(state, item.id, item.type, failed, clipOutput(JSON.stringify(item)), durationMs)];
}

function start(state: CodexStreamState, id: string, name: string, input: unknown): NewEvent {
  const callId = `codex:${state.runKey}:${id}`;
  return { event: { type: 'tool-start', callId, name, input }, dedupeKey: `tool-start:${callId}` };
}

function end(
  state: CodexStreamState,
  id: string,
  name: string,
  isError: boolean,
  output: string,
  durationMs: number,
): NewEvent {
  const callId = `codex:${state.runKey}:${id}`;
  return {
    event: { type: 'tool-end', callId, name, isError, output, durationMs: Math.max(0, durationMs) },
    dedupeKey: `tool-end:${callId}`,
  };
}

/** `/bin/bash -lc 'npm test'` as the command it runs (`npm test`), for the page; anything else as it is. Pure. */
export function unwrapShell(command: string): string {
  const m = /^\/(?:usr\/)?bin\/(?:ba|z)?sh -l?c '((?:[^']|'"'"')*)'$/s.exec(command);
  return m?.[1] ? m[1].replaceAll(`'"'"'`, `'`) : command;
}
