import { describe, expect, it } from 'vitest';
import { repeatedSignals } from '../../src/cli/repeated-signals.ts';

describe('a second signal, or the first one heard twice', () => {
  it.each([
    // [signals with the ms they arrive at, what each one is]
    [[['SIGINT', 0]], ['first']],
    // npm forwards the terminal's Ctrl-C to its script, which the terminal signalled too.
    [
      [
        ['SIGINT', 0],
        ['SIGINT', 3],
      ],
      ['first', 'echo'],
    ],
    [
      [
        ['SIGINT', 0],
        ['SIGINT', 499],
      ],
      ['first', 'echo'],
    ],
    // A person pressing Ctrl-C again.
    [
      [
        ['SIGINT', 0],
        ['SIGINT', 500],
      ],
      ['first', 'again'],
    ],
    [
      [
        ['SIGINT', 0],
        ['SIGINT', 10],
        ['SIGINT', 1200],
      ],
      ['first', 'echo', 'again'],
    ],
    // Another signal is never an echo of the first.
    [
      [
        ['SIGTERM', 0],
        ['SIGINT', 5],
      ],
      ['first', 'again'],
    ],
  ] as [[NodeJS.Signals, number][], string[]][])('%j → %j', (arrivals, expected) => {
    let clock = 0;
    const seen = repeatedSignals(() => clock);
    expect(
      arrivals.map(([signal, at]) => {
        clock = at;
        return seen(signal);
      }),
    ).toEqual(expected);
  });
});
