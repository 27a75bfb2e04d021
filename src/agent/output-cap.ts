/** Default cap on what a tool hands back to the model, in characters. */
export const DEFAULT_MAX_OUTPUT_CHARS = 30_000;

/** What the model is told when a tool gives no better way to see the rest of a cut output. */
export const GENERIC_CUT_HINT = 'ask for a smaller part (a line range, a path, a narrower pattern)';

/**
 * The one truncation of text handed to the model: keeps the head and the tail of `text` and says
 * exactly what was cut in the middle (the end of a long output, errors and summaries, matters as
 * much as its start). The result, note included, is at most `maxChars` long unless the note alone
 * is longer. `hint` tells the model how to see the rest.
 */
export function capText(text: string, maxChars: number, hint: string): string {
  if (text.length <= maxChars) return text;
  const note = (cut: number, lines: number) =>
    `\n[... ${cut} characters (${lines} line${lines === 1 ? '' : 's'}) cut from the middle of ${text.length}; ${hint} ...]\n`;
  // Sized for the longest numbers the note can hold, so the whole result stays within maxChars.
  const budget = Math.max(0, maxChars - note(text.length, countLines(text)).length);
  const headLength = Math.floor(budget * 0.4);
  const tailLength = budget - headLength;
  const head = text.slice(0, headLength);
  const tail = tailLength > 0 ? text.slice(text.length - tailLength) : '';
  const cut = text.slice(headLength, text.length - tailLength);
  return head + note(cut.length, countLines(cut)) + tail;
}

function countLines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}
