/** The text with its characters in reverse order. */
export function reverse(text) {
  return [...text].reverse().join('');
}
