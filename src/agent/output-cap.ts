/** Default cap on what a tool hands back to the model, in characters. */
export const DEFAULT_MAX_OUTPUT_CHARS = 30_000;

/**
 * Keeps the head and the tail of `text` within `maxChars` and says exactly what was cut in the
 * middle: the end of a long output (errors, summaries) matters as much as its start.
 * `hint` tells the model how to see the rest.
 */
export function capText(text: string, maxChars: number, hint: string): string {
  if (text.length <= maxChars) return text;
  const headLength = Math.floor(maxChars * 0.4);
  const tailLength = maxChars - headLength;
  const head = text.slice(0, headLength);
  const tail = text.slice(text.length - tailLength);
  const cut = text.slice(headLength, text.length - tailLength);
  const lines = countLines(cut);
  const note = `\n[... ${cut.length} characters (${lines} line${lines === 1 ? '' : 's'}) cut from the middle of ${text.length}; ${hint} ...]\n`;
  return head + note + tail;
}

function countLines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}
