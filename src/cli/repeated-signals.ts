/**
 * Tells a second signal from the first one heard twice. Under `npm start` (or `npm run`), a
 * terminal's Ctrl-C reaches this process from the terminal and again from npm, which forwards it
 * to its script at once: the same signal within half a second is that echo, not a person pressing
 * Ctrl-C again.
 */
export function repeatedSignals(now: () => number = Date.now): (signal: NodeJS.Signals) => 'first' | 'echo' | 'again' {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  return (signal) => {
    if (!first) {
      first = { signal, at: now() };
      return 'first';
    }
    return signal === first.signal && now() - first.at < 500 ? 'echo' : 'again';
  };
}
