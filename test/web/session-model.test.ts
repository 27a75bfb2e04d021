import { describe, expect, it } from 'vitest';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import { SessionModel } from '../../web/src/session-model.ts';

const actor = { source: 'web' as const, id: 'ada', name: 'Ada' };
let seq = 0;
const stored = (event: SessionEvent, at = '2026-11-30T10:00:00.000Z'): StoredEvent => ({
  sessionId: 's',
  seq: ++seq,
  at,
  event,
});
const delta = (turn: number, offset: number, text: string) => ({
  type: 'assistant-delta' as const,
  turn,
  offset,
  text,
});
const kinds = (model: SessionModel) => model.items.map((i) => i.kind);

describe('the session page model', () => {
  it('shows each stored event once, however often the stream replays it', () => {
    seq = 0;
    const model = new SessionModel();
    const events = [
      stored({ type: 'user-message', actor, text: 'fix it' }),
      stored({ type: 'tool-start', callId: 'c1', name: 'run_shell', input: { command: 'ls' } }),
    ];
    for (const e of [...events, ...events, events[0]!]) model.apply(e);
    expect(kinds(model)).toEqual(['user', 'tool']);
    expect(model.lastSeq).toBe(2);
  });

  it('folds a tool call and its result into one item, and an answer into its question', () => {
    seq = 0;
    const model = new SessionModel();
    model.apply(stored({ type: 'tool-start', callId: 'c1', name: 'run_shell', input: { command: 'ls' } }));
    model.apply(stored({ type: 'question-asked', questionId: 'q1', question: 'Tabs?', choices: ['tabs', 'spaces'] }));
    expect(model.openQuestions).toEqual(['q1']);
    model.apply(
      stored({ type: 'tool-end', callId: 'c1', name: 'run_shell', isError: true, output: 'boom', durationMs: 5 }),
    );
    model.apply(stored({ type: 'question-answered', questionId: 'q1', actor, text: 'spaces' }));
    expect(model.items).toMatchObject([
      { kind: 'tool', callId: 'c1', end: { isError: true, output: 'boom' } },
      { kind: 'question', questionId: 'q1', answer: { text: 'spaces', actor: { name: 'Ada' } } },
    ]);
    expect(model.openQuestions).toEqual([]);
  });

  it('streams text in place, marks what it missed, and gives way to the stored message', () => {
    seq = 0;
    const model = new SessionModel();
    model.apply(stored({ type: 'user-message', actor, text: 'go' }));
    model.applyLive(delta(0, 0, 'Let me '));
    model.applyLive(delta(0, 7, 'look'));
    model.applyLive(delta(0, 7, 'look')); // again after a reconnect
    expect(model.items[1]).toMatchObject({ kind: 'streaming', text: 'Let me look', partial: false });
    model.applyLive(delta(1, 40, 'tail of a turn we joined late'));
    expect(model.items[2]).toMatchObject({
      kind: 'streaming',
      turn: 1,
      text: 'tail of a turn we joined late',
      partial: true,
    });

    model.apply(stored({ type: 'assistant-message', turn: 0, text: 'Let me look at it.' }));
    model.apply(stored({ type: 'tool-start', callId: 'c1', name: 'read_file', input: { path: 'a' } }));
    model.apply(
      stored({ type: 'tool-end', callId: 'c1', name: 'read_file', isError: false, output: 'x', durationMs: 1 }),
    );
    expect(kinds(model)).toEqual(['user', 'assistant', 'streaming', 'tool']);
    expect(model.items[3]).toMatchObject({ kind: 'tool', end: { output: 'x' } });
    // A late chunk of a finished turn changes nothing.
    expect(model.applyLive(delta(0, 11, ' more'))).toBe(false);
    model.apply(stored({ type: 'assistant-message', turn: 1, text: 'The whole second turn.' }));
    expect(kinds(model)).toEqual(['user', 'assistant', 'assistant', 'tool']);
    expect(model.items.map((i) => ('text' in i ? i.text : i.kind))).toEqual([
      'go',
      'Let me look at it.',
      'The whole second turn.',
      'tool',
    ]);
  });

  it('keeps checks and verdicts with their commit, and the latest review gate', () => {
    seq = 0;
    const model = new SessionModel();
    const check = {
      type: 'check-finished' as const,
      phase: 'check' as const,
      name: 'test',
      command: 'npm test',
      exitCode: 1,
      durationMs: 10,
      logHead: '',
      logTail: 'FAIL',
    };
    model.apply(stored({ ...check, commit: 'a1', outcome: 'failed' }));
    model.apply(stored({ ...check, commit: 'b2', outcome: 'passed', exitCode: 0 }));
    model.apply(stored({ type: 'review-gate', commit: 'b2', ready: true, reasons: [] }));
    expect(model.checks.map((c) => [c.commit, c.outcome])).toEqual([
      ['a1', 'failed'],
      ['b2', 'passed'],
    ]);
    expect(model.gates.at(-1)).toMatchObject({ commit: 'b2', ready: true });
    expect(model.items.filter((i) => i.kind === 'note').map((i) => i.kind === 'note' && i.tone)).toEqual([
      'bad',
      'good',
      'good',
    ]);
  });

  it('joins a page read later to the events after it: the call and its result, the question and its answer', () => {
    seq = 0;
    const log = [
      stored({ type: 'user-message', actor, text: 'go' }),
      stored({ type: 'tool-start', callId: 'c1', name: 'run_shell', input: { command: 'npm test' } }),
      stored({ type: 'question-asked', questionId: 'q1', question: 'Tabs?', choices: ['tabs', 'spaces'] }),
      stored({ type: 'tool-end', callId: 'c1', name: 'run_shell', isError: false, output: 'ok', durationMs: 3 }),
      stored({ type: 'question-answered', questionId: 'q1', actor, text: 'tabs' }),
      stored({ type: 'assistant-message', turn: 1, text: 'Done.' }),
    ];
    const model = new SessionModel();
    for (const e of log.slice(3)) model.apply(e);
    model.applyLive(delta(2, 0, 'Still writing'));
    expect(model.firstSeq).toBe(4);
    expect(model.prepend(log.slice(1, 3))).toBe(true);
    // Already held, so nothing changes.
    expect(model.prepend(log.slice(2, 5))).toBe(false);
    model.prepend(log.slice(0, 1));
    expect(model.firstSeq).toBe(1);
    expect(model.lastSeq).toBe(6);
    expect(kinds(model)).toEqual(['user', 'tool', 'question', 'assistant', 'streaming']);
    expect(model.items[1]).toMatchObject({ kind: 'tool', input: { command: 'npm test' }, end: { output: 'ok' } });
    expect(model.items[2]).toMatchObject({ kind: 'question', answer: { text: 'tabs' } });
    // The streamed turn still takes its text and gives way to its stored message.
    model.applyLive(delta(2, 13, ' more'));
    expect(model.items[4]).toMatchObject({ kind: 'streaming', text: 'Still writing more' });
    model.apply(stored({ type: 'assistant-message', turn: 2, text: 'Written.' }));
    expect(kinds(model)).toEqual(['user', 'tool', 'question', 'assistant', 'assistant']);
  });
});
