import { describe, expect, it } from 'vitest';
import { createLoopGuard, stableStringify } from '../../src/agent/loop-guard.ts';

type Call = { name: string; input: unknown; isError: boolean; output: string };
const fail = (output = 'exit 1: not found', input: unknown = { command: 'make' }): Call => ({
  name: 'run_shell',
  input,
  isError: true,
  output,
});
const ok = (input: unknown = { command: 'make' }): Call => ({
  name: 'run_shell',
  input,
  isError: false,
  output: 'fine',
});

describe('loop guard', () => {
  const cases: [string, Call[], boolean][] = [
    ['the same failure three times stops', [fail(), fail(), fail()], true],
    ['two identical failures do not', [fail(), fail()], false],
    ['a success in between resets', [fail(), fail(), ok(), fail(), fail()], false],
    ['a different error is new information', [fail('a'), fail('b'), fail('a')], false],
    ['a different input is another call', [fail(), fail('exit 1: not found', { command: 'make test' }), fail()], false],
    [
      'key order in the input does not matter',
      [fail('x', { a: 1, b: 2 }), fail('x', { b: 2, a: 1 }), fail('x', { a: 1, b: 2 })],
      true,
    ],
    [
      'interleaved other calls do not reset',
      [fail(), ok({ command: 'ls' }), fail(), ok({ command: 'pwd' }), fail()],
      true,
    ],
  ];
  it.each(cases)('%s', (_name, calls, stops) => {
    const guard = createLoopGuard({ maxRepeats: 3 });
    const verdicts = calls.map((call) => guard.record(call));
    expect(verdicts.at(-1)!.stop).toBe(stops);
    expect(verdicts.slice(0, -1).every((v) => !v.stop)).toBe(true);
  });

  it('sees a repeat through noise: durations, timestamps, pids and temp paths differ, the failure does not', () => {
    const guard = createLoopGuard({ maxRepeats: 3 });
    const run = (ms: number, at: string, pid: number, tmp: string) =>
      fail(
        [
          `> test\n> node --test\n`,
          `[${at}] worker pid ${pid} started`,
          `not ok 1 - adds numbers (${ms}ms)`,
          `  AssertionError: expected 5 to equal 4 at ${tmp}/suite.js:3`,
          `# fail 1`,
          `# duration_ms ${ms}.${pid % 100}ms`,
        ].join('\n'),
        { command: 'npm test' },
      );
    const verdicts = [
      guard.record(run(41, '2026-12-03T10:00:01.123Z', 4121, '/tmp/tmp-81AbC')),
      guard.record(run(57, '2026-12-03T10:00:09.456Z', 4388, '/tmp/tmp-9xQzR')),
      guard.record(run(63, '2026-12-03T10:01:12.001Z', 4502, '/tmp/tmp-KK2pw')),
    ];
    expect(verdicts.map((v) => v.stop)).toEqual([false, false, true]);
  });

  it('still tells a different failure from a repeat behind the same noise', () => {
    const guard = createLoopGuard({ maxRepeats: 2 });
    guard.record(fail('AssertionError: expected 5 to equal 4 (41ms)', { command: 'npm test' }));
    const next = guard.record(fail('AssertionError: expected 6 to equal 4 (52ms)', { command: 'npm test' }));
    expect(next.stop).toBe(false);
  });

  it('says what repeated', () => {
    const guard = createLoopGuard({ maxRepeats: 2 });
    guard.record(fail('exit 2: make: *** No rule to make target\nmore'));
    expect(guard.record(fail('exit 2: make: *** No rule to make target\nmore'))).toEqual({
      stop: true,
      reason:
        'the agent repeated the same failing run_shell call 2 times with the same result: exit 2: make: *** No rule to make target',
    });
  });

  it('stringifies stably', () => {
    expect(stableStringify({ b: [1, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[1,{"c":2,"d":1}]}');
  });
});
