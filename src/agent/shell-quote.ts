/** Quotes one argument for `sh -c`: single quotes, with embedded single quotes spliced in. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
