/** Whether n is an even integer. */
export function isEven(n) {
  return n % 2 === 0;
}
