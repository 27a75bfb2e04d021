import type { ModelMessage } from './model-provider.ts';

/**
 * Pure context-budget helpers the runner calls: replace old turns by a summary when the transcript
 * nears the model's window. (Oversized tool output is cut once, by the tool registry: capText.)
 */

export type CompactOptions = {
  contextWindow: number;
  estimateTokens: (message: ModelMessage) => number;
  /** Produces the summary of the replaced messages, e.g. with a model call. */
  summarize: (messages: readonly ModelMessage[]) => Promise<string>;
  /** Compact once the transcript uses more than this share of the window (default 0.75). */
  threshold?: number;
  /** Keep about this share of the window as recent, verbatim turns (default 0.3). */
  keepRecent?: number;
  /** Tokens reserved for the system prompt, tools and the reply (default 0). */
  reservedTokens?: number;
};

export type CompactResult = { messages: ModelMessage[]; replaced: number; summary?: string };

export const summaryPrefix = '[Summary of the earlier conversation, written when the context filled up]';

/**
 * When the transcript nears the window, replaces the oldest messages by one user message holding
 * their summary. The cut falls only before a user or assistant message, never between an
 * assistant's tool calls and their results. Returns `replaced: 0` when nothing needs or can be done.
 */
export async function compactTranscript(
  messages: readonly ModelMessage[],
  options: CompactOptions,
): Promise<CompactResult> {
  const threshold = options.threshold ?? 0.75;
  const keepRecent = options.keepRecent ?? 0.3;
  const budget = options.contextWindow - (options.reservedTokens ?? 0);
  const sizes = messages.map((m) => options.estimateTokens(m));
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= budget * threshold) return { messages: [...messages], replaced: 0 };

  // Walk back from the end, keeping recent messages while they fit the keep budget.
  const keepBudget = budget * keepRecent;
  let kept = 0;
  let cut = messages.length;
  while (cut > 0 && kept + (sizes[cut - 1] ?? 0) <= keepBudget) {
    cut--;
    kept += sizes[cut] ?? 0;
  }
  // Tool results belong to the assistant message before them: move the cut back past them.
  while (cut > 0 && cut < messages.length && messages[cut]?.role === 'tool') cut--;
  // Keep at least the newest turn even if it alone exceeds the keep budget.
  if (cut === messages.length) {
    cut = messages.length - 1;
    while (cut > 0 && messages[cut]?.role === 'tool') cut--;
  }
  if (cut <= 0) return { messages: [...messages], replaced: 0 };

  const older = messages.slice(0, cut);
  const summary = await options.summarize(older);
  const summaryMessage: ModelMessage = { role: 'user', content: `${summaryPrefix}\n${summary}` };
  return { messages: [summaryMessage, ...messages.slice(cut)], replaced: older.length, summary };
}

/** A rough estimate (4 characters a token) for when no tokenizer is at hand. */
export function estimateMessageTokens(message: ModelMessage): number {
  const text =
    message.role === 'assistant' ? (message.content ?? '') + JSON.stringify(message.toolCalls ?? []) : message.content;
  return Math.ceil(text.length / 4) + 4;
}
