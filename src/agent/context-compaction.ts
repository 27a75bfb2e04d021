import type { Logger } from 'pino';
import type { EventOf, StoredEvent } from '../core/events.ts';
import { compactTranscript, estimateMessageTokens, summaryPrefix } from '../models/context-budget.ts';
import { addUsage } from '../models/model-catalog.ts';
import {
  zeroUsage,
  type ModelMessage,
  type ModelProvider,
  type ToolSpec,
  type Usage,
} from '../models/model-provider.ts';

/** A transcript message with the user-message event it consumed, if any (see TranscriptEntry). */
export type RunEntry = { message: ModelMessage; eventSeq: number | null };

export type PeopleMessage = StoredEvent & { event: EventOf<'user-message'> };

export type CompactionInput = {
  entries: readonly RunEntry[];
  model: ModelProvider;
  system: string;
  tools: readonly ToolSpec[];
  maxOutputTokens: number;
  /** Compact once the transcript uses more than this share of the usable window. */
  threshold: number;
  /** The people's messages the log holds up to and including `seq`, oldest first. */
  peopleUpTo: (seq: number) => Promise<PeopleMessage[]>;
  quote: (m: PeopleMessage) => string;
  signal: AbortSignal;
  log: Logger;
};

export type Compaction = {
  entries: RunEntry[];
  summary: string;
  replaced: number;
  /** What the summarizing model call cost (zero when it failed before answering). */
  usage: Usage;
  /** False when the model call failed and the summary is the deterministic extract. */
  modelSummary: boolean;
};

const SUMMARY_SYSTEM = [
  "You compress the early part of a coding agent's working session so the agent can continue without it.",
  'Write a factual summary for the agent itself: the task and every requirement or decision people stated,',
  'what has been done (files created or changed, commands run and their outcomes), what was learned about the',
  'repository, what failed and why, and what remained to do. Keep paths, names, commands and error messages exact.',
  'Do not invent anything. Plain text, no preamble.',
].join(' ');

const SUMMARY_REQUEST = 'Summarize this earlier part of the session (the transcript follows):';

/** Per-message clip in the text handed to the summarizer: tool output is the bulk and the least durable. */
const CLIP_TOOL = 1_500;
const CLIP_OTHER = 4_000;
/** People's messages kept verbatim in the summary turn. */
const MAX_PEOPLE = 20;
const CLIP_PERSON = 2_000;

/**
 * Replaces the oldest turns by a summary turn when the transcript nears the model's window.
 * The summary comes from the same model (no tools, a summarization prompt), or from a deterministic
 * extract when that call fails. Whatever the summary says, people's messages from the replaced part
 * are appended verbatim, so no instruction is lost to a poor summary. The summary message carries the
 * highest event seq of what it replaced, so the runner's "consumed up to" bookkeeping is unchanged.
 * Returns undefined when nothing needs (or can) be compacted.
 */
export async function compactEntries(input: CompactionInput): Promise<Compaction | undefined> {
  const { entries, model } = input;
  const window = model.contextWindow;
  // The system prompt, the tool definitions and room for the reply share the window with the transcript.
  const reserved =
    Math.ceil((input.system.length + JSON.stringify(input.tools).length) / 4) +
    Math.min(input.maxOutputTokens, Math.floor(window * 0.25));
  let usage: Usage = { ...zeroUsage };
  let modelSummary = true;
  let replacedSeq = 0;

  const summarize = async (older: readonly ModelMessage[]): Promise<string> => {
    replacedSeq = Math.max(0, ...entries.slice(0, older.length).map((e) => e.eventSeq ?? 0));
    const budgetChars = Math.max(8_000, (window - reserved) * 2);
    let text: string | undefined;
    try {
      const result = await model.runTurn({
        system: SUMMARY_SYSTEM,
        messages: [
          { role: 'user', content: `${SUMMARY_REQUEST}\n\n${clipMiddle(renderTranscript(older), budgetChars)}` },
        ],
        tools: [],
        maxTokens: Math.min(input.maxOutputTokens, 4_096),
        signal: input.signal,
      });
      usage = addUsage(usage, result.usage);
      if (result.stopReason === 'error')
        input.log.warn({ code: result.error?.code }, 'summary call failed; using an extract');
      else if (result.stopReason !== 'aborted' && result.content?.trim()) text = result.content.trim();
    } catch (error) {
      // Providers must not throw; one that does still must not cost the session its context.
      input.log.warn({ err: error }, 'summary call threw; using an extract');
    }
    if (!text) {
      modelSummary = false;
      text = extractiveSummary(older);
    }
    const people = replacedSeq > 0 ? await input.peopleUpTo(replacedSeq) : [];
    return people.length ? `${text}\n\n${peopleSection(people, input.quote)}` : text;
  };

  const result = await compactTranscript(
    entries.map((e) => e.message),
    {
      contextWindow: window,
      estimateTokens: estimateMessageTokens,
      summarize,
      threshold: input.threshold,
      reservedTokens: reserved,
    },
  );
  if (result.replaced === 0 || !result.summary || input.signal.aborted) return undefined;
  const [summaryMessage, ...rest] = result.messages;
  const kept = entries.slice(result.replaced);
  if (!summaryMessage || rest.length !== kept.length)
    throw new Error('compaction returned a transcript that does not line up with the entries it kept');
  return {
    entries: [{ message: summaryMessage, eventSeq: replacedSeq || null }, ...kept],
    summary: summaryMessage.role === 'user' ? summaryMessage.content : (result.summary ?? ''),
    replaced: result.replaced,
    usage,
    modelSummary,
  };
}

/** The replaced messages as plain text: a summarizer needs no tool definitions to read them. */
export function renderTranscript(messages: readonly ModelMessage[]): string {
  return messages
    .map((m) => {
      switch (m.role) {
        case 'user':
          return `## User\n${clip(withoutPeople(m.content), CLIP_OTHER)}`;
        case 'assistant': {
          const calls = (m.toolCalls ?? []).map((c) => `- call ${c.name} ${clip(JSON.stringify(c.input) ?? '', 500)}`);
          return [`## Assistant`, m.content ? clip(m.content, CLIP_OTHER) : '', ...calls].filter(Boolean).join('\n');
        }
        case 'tool':
          return `## Result of ${m.name}${m.isError ? ' (error)' : ''}\n${clip(m.content, CLIP_TOOL)}`;
        default: {
          const _never: never = m;
          return _never;
        }
      }
    })
    .join('\n\n');
}

/** The fallback when the model cannot summarize: what was said and done, mechanically. */
export function extractiveSummary(messages: readonly ModelMessage[]): string {
  const said = messages.flatMap((m) =>
    m.role === 'assistant' && m.content ? [clip(m.content.replace(/\s+/g, ' '), 300)] : [],
  );
  const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
  const errors = new Set(messages.flatMap((m) => (m.role === 'tool' && m.isError ? [m.toolCallId] : [])));
  const counts = new Map<string, number>();
  for (const c of calls) counts.set(c.name, (counts.get(c.name) ?? 0) + 1);
  const lines = [`(An extract: the summary call failed. ${messages.length} earlier messages were replaced.)`];
  // People's messages are added verbatim by the caller; what else is worth keeping is an earlier summary.
  const earlier = messages.flatMap((m) =>
    m.role === 'user' && m.content.startsWith(summaryPrefix)
      ? [clip(withoutPeople(m.content).slice(summaryPrefix.length).trim(), 4_000)]
      : [],
  );
  if (earlier.length) lines.push('', 'Earlier summary:', ...earlier);
  if (said.length) lines.push('', 'What you said (latest last):', ...said.slice(-10).map((s) => `- ${s}`));
  if (calls.length) {
    lines.push('', `Tool calls: ${[...counts].map(([name, n]) => `${name} ×${n}`).join(', ')}. The latest:`);
    for (const c of calls.slice(-15))
      lines.push(`- ${c.name} ${clip(JSON.stringify(c.input) ?? '', 150)}${errors.has(c.id) ? ' (failed)' : ''}`);
  }
  return lines.join('\n');
}

const PEOPLE_HEADING = 'Messages from people up to this point, verbatim:';

/** An earlier summary without its people section: the new summary repeats that section in full. */
function withoutPeople(content: string): string {
  if (!content.startsWith(summaryPrefix)) return content;
  const at = content.indexOf(`\n\n${PEOPLE_HEADING}`);
  return at < 0 ? content : content.slice(0, at);
}

function peopleSection(people: readonly PeopleMessage[], quote: (m: PeopleMessage) => string): string {
  const shown = people.length > MAX_PEOPLE ? [people[0]!, ...people.slice(-(MAX_PEOPLE - 1))] : [...people];
  const omitted = people.length - shown.length;
  const body = shown.map((m) => clip(quote(m), CLIP_PERSON));
  if (omitted > 0) body.splice(1, 0, `[${omitted} further message(s) from people are in the session log]`);
  return `${PEOPLE_HEADING}\n\n${body.join('\n\n')}`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} [... ${text.length - max} more characters]`;
}

function clipMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.4);
  const tail = max - head;
  return `${text.slice(0, head)}\n\n[... ${text.length - max} characters of the conversation left out here ...]\n\n${text.slice(text.length - tail)}`;
}
