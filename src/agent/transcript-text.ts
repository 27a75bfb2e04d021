import type { Actor } from '../core/actor.ts';
import type { ModelMessage, ToolCall } from '../models/model-provider.ts';
import type { UserMessageEvent } from './run-state.ts';

/** Calls of the last assistant turn that have no tool result after it. */
export function unresolvedCalls(messages: readonly ModelMessage[]): ToolCall[] {
  const lastAssistant = messages.findLastIndex((m) => m.role === 'assistant');
  if (lastAssistant < 0) return [];
  const assistant = messages[lastAssistant]!;
  if (assistant.role !== 'assistant' || !assistant.toolCalls?.length) return [];
  const answered = new Set(messages.slice(lastAssistant + 1).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  return assistant.toolCalls.filter((c) => !answered.has(c.id));
}

/** People's words reach the model quoted, with author and time: user content, not instructions. */
export function quote(actor: Actor, at: string, text: string): string {
  const who = actor.email ? `${actor.name} <${actor.email}>` : actor.name;
  const body = text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return `Message from ${who} via ${actor.source} at ${at}:\n${body}`;
}

/** A person's message as the model reads it. */
export function quoteMessage(e: UserMessageEvent): string {
  return quote(e.event.actor, e.at, e.event.text);
}

/** The first message of a session: the task. */
export function taskMessage(e: UserMessageEvent): string {
  return `New task.\n\n${quoteMessage(e)}`;
}

/** `text` cut to `max` characters, with a note of how much was cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[... ${text.length - max} more characters]`;
}
