import { z } from 'zod';

/**
 * What a session does with a request: `ask` answers a question read-only (no commit, no branch
 * pushed, no pull request), `do` changes code and ends with a pull request.
 */
export const SessionMode = z.enum(['ask', 'do']);
export type SessionMode = z.infer<typeof SessionMode>;

/** Who chose the mode: the requester's own words ("ask: …", "do: …") or Patchbay reading the request. */
export const ModeSource = z.enum(['requester', 'router']);
export type ModeSource = z.infer<typeof ModeSource>;

export type ModeChoice = { mode: SessionMode; source: ModeSource; reason: string };

/** A leading mention (`@patchbay`), then `ask:` or `do:` (a colon or a dash). */
const FORCED = /^\s*(?:@[\w.-]+(?:\[bot\])?[\s,]*)?(ask|do)\s*[:\u2013\u2014]\s*\S/i;

/** The mode a person forced with their first word: "ask: where is …", "@patchbay do: fix …". */
export function forcedMode(text: string): SessionMode | undefined {
  const match = FORCED.exec(text);
  return match ? SessionMode.parse(match[1]!.toLowerCase()) : undefined;
}

/** Verbs that order a change when a sentence starts with them ("fix it", "add a test for …"). */
const ORDER_VERBS =
  'fix|add|implement|change|update|remove|delete|drop|rename|refactor|rewrite|write|create|make|bump|upgrade|downgrade|migrate|replace|move|patch|correct|resolve|raise|lower|increase|decrease|set|switch|convert|extract|split|merge|clean|tidy|document|open|send|apply|revert|port|enable|disable|handle|support|build|take|tackle|finish|complete|address|ship';

/** A sentence that is an order: starts with a verb above, maybe after "please", "now", "ok", "go ahead and". */
const IMPERATIVE = new RegExp(
  `^(?:(?:ok(?:ay)?|yes|great|thanks|then|and|so|now|please|pls|go ahead and|let'?s)[\\s,!.]+)*(?:${ORDER_VERBS})\\b`,
  'i',
);

/** Verbs that ask for words, not work: "can you explain …?" is a question. */
const ASK_VERBS =
  'tell|explain|show|describe|find|check|look|see|confirm|clarify|summari[sz]e|list|point|help me understand|walk me';

/**
 * A polite order phrased as a question: "can you fix …?", "could you please take this one?" (any
 * verb but one that asks for words), "I'd like you to add …".
 */
const POLITE_ORDER = new RegExp(
  `^(?:(?:(?:can|could|would|will) you|would you mind)\\s+(?:please\\s+)?(?!(?:${ASK_VERBS})\\b)[a-z]+|(?:i(?:'d| would) like you to|i want you to|we need to|you should)\\s+(?:please\\s+)?(?:${ORDER_VERBS})\\b)`,
  'i',
);

/**
 * A sentence that asks without a question mark: a question word or "explain …" first. ("Do it"
 * and "Is broken" are no questions: an auxiliary verb first counts only with the question mark.)
 */
const QUESTION_START =
  /^(?:where|what|which|who|whom|whose|why|how|when|explain|describe|tell me|show me|summari[sz]e|walk me through|find out|i wonder|any idea)\b/i;

/**
 * The requester's sentences: without quoted lines (`> …`, someone else's words: an issue's text,
 * see quote-untrusted.ts), mentions, links and code spans (a URL's `?` is no question).
 */
function sentencesOf(text: string): string[] {
  return (
    text
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('>'))
      .join('\n')
      .replace(/<@[^>]+>/g, ' ')
      .replace(/`[^`]*`/g, 'code')
      .replace(/<?https?:\/\/[^\s>]+>?/g, 'link')
      .split(/(?<=[.!?])\s+|\n+/)
      // A sentence's leading mention ("@patchbay can you …") is no word of the request.
      .map((s) => s.replace(/^@[\w.-]+(?:\[bot\])?[\s,]*/, '').trim())
      .filter(Boolean)
  );
}

/** Whether the text orders a change: one of its sentences is an order. */
export function ordersChange(text: string): boolean {
  return sentencesOf(text).some((s) => IMPERATIVE.test(s) || POLITE_ORDER.test(s));
}

/**
 * How a new request reads, by rules (no model call, so it is free and the same every time): its
 * forced word first; then any order in it makes it a task; a request whose sentences ask and
 * order nothing is a question; anything else is a task, as before.
 */
export function classifyRequest(text: string): ModeChoice {
  const forced = forcedMode(text);
  if (forced) return { mode: forced, source: 'requester', reason: `the request starts with "${forced}:"` };
  if (ordersChange(text)) return { mode: 'do', source: 'router', reason: 'the request asks for a change' };
  const sentences = sentencesOf(text);
  const asks = sentences.some((s) => s.endsWith('?') || QUESTION_START.test(s));
  if (asks) return { mode: 'ask', source: 'router', reason: 'the request asks a question and orders no change' };
  return { mode: 'do', source: 'router', reason: 'the request asks for a change' };
}

/**
 * The mode after people's messages: the first decides (classifyRequest); while answering, a
 * message that orders a change ("now fix it", "do: …") turns the session into a task. A task
 * stays a task. Undefined when nothing changes.
 */
export function nextMode(current: ModeChoice | undefined, messages: readonly string[]): ModeChoice | undefined {
  let mode = current;
  for (const [i, text] of messages.entries()) {
    if (!mode) {
      mode = classifyRequest(text);
      continue;
    }
    if (mode.mode === 'do') break;
    const forced = forcedMode(text);
    if (forced === 'do') mode = { mode: 'do', source: 'requester', reason: 'a message starts with "do:"' };
    else if (!forced && ordersChange(text))
      mode = { mode: 'do', source: 'router', reason: `message ${i + 1} asks for a change` };
  }
  return mode === current ? undefined : mode;
}

/** What the thread is told when the mode is chosen: which, why, and how to have the other. */
export function modeNotice(choice: ModeChoice): string {
  const why = choice.source === 'requester' ? `as asked (${choice.reason})` : `because ${choice.reason}`;
  if (choice.mode === 'ask')
    return `Answering without changing anything, ${why}: no branch, no pull request. Reply "fix it" (or start with "do:") to have me change the code.`;
  return `Working on a change, ${why}: this ends with a pull request. Start a request with "ask:" to get an answer without changes.`;
}
