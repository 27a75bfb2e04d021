import type { OpenAIReply, OpenAIRequestBody } from '../fakes/fake-openai.ts';
import { passingVerdict, verdict } from './scripted-verifier.ts';

/**
 * The model's turns for the OpenAI-speaking engines' end-to-end tests (Codex, OpenCode), scripted
 * by the task's words on the loopback Responses fake, so each real CLI makes real tool calls: Codex's
 * `exec_command` and freeform `apply_patch`, OpenCode's `bash` and `apply_patch`. Patchbay's own
 * loop, when a session runs it, only answers.
 */

/** The verifier's critique, as the engine's rework is handed it. */
export const CRITIQUE = 'An independent reviewer did not pass your change';

/** What the sandbox shows of its environment and of any file holding the real key (the engine's first command). */
export const PROBE =
  'env | sort; echo "--- files with the key:"; grep -rls "test-openai""-key" /workspace /tmp /opt /etc /run 2>/dev/null; echo "--- probe done"';

type Item = Record<string, unknown> & { type?: string };
type Turn = Extract<OpenAIReply, { toolCalls?: unknown }>;

/** The verifier's call: Patchbay's own provider forcing record_verdict. */
export function isVerifier(body: OpenAIRequestBody): boolean {
  return (body.tool_choice as { name?: string } | undefined)?.name === 'record_verdict';
}

/** Everything the model is shown: instructions, messages, tool calls and their outputs. */
export function inputText(body: OpenAIRequestBody): string {
  return JSON.stringify([body.instructions ?? '', body.input]);
}

/** The names of the tools a request offers the model. */
export function toolNames(body: OpenAIRequestBody): string[] {
  return ((body.tools as Item[] | undefined) ?? []).map((t) => String(t.name));
}

/** How many tool results the engine has sent back so far in this conversation. */
export function toolOutputs(body: OpenAIRequestBody): number {
  const input = Array.isArray(body.input) ? (body.input as Item[]) : [];
  return input.filter((i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output').length;
}

/** A command, as each CLI's tools take it: Codex's `exec_command`, OpenCode's `bash`. */
export function command(body: OpenAIRequestBody, cmd: string): Turn {
  const tools = ((body.tools as Item[] | undefined) ?? []).map((t) => t.name);
  return tools.includes('exec_command')
    ? { toolCalls: [{ name: 'exec_command', arguments: { cmd, yield_time_ms: 30_000 } }] }
    : { toolCalls: [{ name: 'bash', arguments: { command: cmd, description: 'run', timeout: 600_000 } }] };
}

/** A new file, as each CLI's apply_patch takes it: Codex's freeform tool, OpenCode's function tool. */
export function addFile(body: OpenAIRequestBody, path: string, content: string): Turn {
  const patch = `*** Begin Patch\n*** Add File: ${path}\n+${content}\n*** End Patch\n`;
  const custom = ((body.tools as Item[] | undefined) ?? []).some(
    (t) => t.type === 'custom' && t.name === 'apply_patch',
  );
  return custom
    ? { toolCalls: [{ name: 'apply_patch', arguments: patch, custom: true }] }
    : { toolCalls: [{ name: 'apply_patch', arguments: { patchText: patch } }] };
}

/** The engine's turns, by the task's words and how far the conversation is; Patchbay's own loop only answers. */
export function engineTurn(body: OpenAIRequestBody): OpenAIReply {
  const text = inputText(body);
  const n = toolOutputs(body);
  const engine = ((body.tools as Item[] | undefined) ?? []).some((t) => t.name === 'exec_command')
    ? 'codex'
    : 'opencode';
  if (!body.tools) return { text: 'Patchbay session' };
  // Patchbay's own loop (its run_shell among the tools) only answers.
  if (toolNames(body).includes('run_shell')) return { text: 'I looked: nothing needs to change.' };
  if (text.includes('doc-case')) return n === 0 ? addFile(body, 'DOC.md', 'doc') : { text: 'Added DOC.md.' };
  if (text.includes('budget-case')) return { ...command(body, 'echo spent'), outputTokens: 2_000_000 };
  if (text.includes('stop-case')) return command(body, `sleep 300; echo stopped-${engine}`);
  if (text.includes('ask-case')) {
    if (!text.includes('NOTES.md please'))
      return { text: 'Two names fit.\nQUESTION: Should the file be NOTES.md or notes.txt?' };
    if (n === 0) return addFile(body, 'NOTES.md', 'notes');
    return { text: 'Wrote NOTES.md as asked.' };
  }
  // pr-case: probe, write, finish; after the critique, one more command and finish.
  if (text.includes(CRITIQUE)) {
    if (n === 2) return command(body, 'echo "- reworked" >> CHANGES.md');
    return { text: 'Reworked CHANGES.md as the reviewer asked.' };
  }
  if (n === 0) return command(body, PROBE);
  if (n === 1) return addFile(body, 'CHANGES.md', '# Changes');
  return { text: 'Added CHANGES.md.' };
}

/** The verifier (a forced record_verdict): fails the pr-case's first attempt once, passes everything else. */
export function verifierTurn(body: OpenAIRequestBody, calls: Map<string, number>): OpenAIReply {
  const key = inputText(body).includes('pr-case') ? 'pr' : 'other';
  const n = (calls.get(key) ?? 0) + 1;
  calls.set(key, n);
  const v =
    key === 'pr' && n === 1 ? verdict([2, 0, 1, 2], 'The changes file has no entry for this change.') : passingVerdict;
  return { toolCalls: [{ name: 'record_verdict', arguments: v }] };
}
