/** The arithmetic mean of a non-empty list. */
export function mean(numbers) {
  return numbers.reduce((a, b) => a + b, 0) / numbers.length;
}
