import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { RunnerLog } from '../../src/agent/agent-runner.ts';
import type { StoredEvent } from '../../src/core/events.ts';
import type { Step, TranscriptEntry } from '../../src/core/run-log.ts';
import type { EngineRunInput } from '../../src/engines/engine.ts';
import { openEngineRun, recordEngineTurn, recordGiven } from '../../src/engines/engine-transcript.ts';

const actor = { source: 'slack' as const, id: 'U1', name: 'Alice' };

/** A run log in memory: the transcript and the user messages an engine run reads and writes. */
function memoryLog(messages: string[]): RunnerLog & { entries: TranscriptEntry[] } {
  const events: StoredEvent[] = messages.map((text, i) => ({
    sessionId: 's',
    seq: i + 1,
    at: '2026-12-07T00:00:00Z',
    event: { type: 'user-message', actor, text },
  }));
  const entries: TranscriptEntry[] = [];
  return {
    entries,
    get: async () => undefined,
    transcript: async () => entries,
    events: async (_id, options) => events.filter((e) => !options?.types || options.types.includes(e.event.type)),
    commitStep: async (_id, step: Step) => {
      for (const m of step.messages ?? [])
        entries.push({ idx: entries.length, message: m.message, eventSeq: m.eventSeq ?? null });
      return [];
    },
    replaceTranscript: async () => undefined,
  };
}

const input = (runLog: RunnerLog) =>
  ({ sessionId: 's', runLog, log: pino({ level: 'silent' }) }) as unknown as EngineRunInput;

describe('what an engine run resumes and is told', () => {
  it('the task first; later only the new messages, with the engine session to resume', async () => {
    const log = memoryLog(['fix the test']);
    const first = await openEngineRun(input(log), 'claude-code');
    expect(first.resume).toBeUndefined();
    expect(first.prompt).toMatch(/^New task\.\n\nMessage from Alice via slack .*\n> fix the test$/);
    await recordGiven(input(log), first);
    await recordEngineTurn(input(log), { engine: 'claude-code', engineSessionId: 'abc' }, 'done');
    const again = await openEngineRun(input(log), 'claude-code');
    expect(again).toMatchObject({ prompt: '', resume: { engine: 'claude-code', engineSessionId: 'abc' } });
    // Another engine's session is not this one's to resume.
    expect((await openEngineRun(input(log), 'codex')).resume).toBeUndefined();
  });

  it('a run stopped after the engine was given its messages goes on from there, once', async () => {
    const log = memoryLog(['fix the test']);
    const first = await openEngineRun(input(log), 'claude-code');
    await recordGiven(input(log), first);
    // The worker died here: the engine had the task and never answered, and its session's id was
    // never recorded. A fresh session gets the task, then the note to go on without repeating it.
    const restarted = await openEngineRun(input(log), 'claude-code');
    expect(restarted.unread).toEqual([]);
    expect(restarted.resume).toBeUndefined();
    expect(restarted.prompt).toMatch(
      /^New task\.\n\nMessage from Alice via slack .*\n> fix the test\n\nYour previous run was interrupted/,
    );

    // A later round interrupted the same way resumes the engine's session, which has the thread.
    await recordEngineTurn(input(log), { engine: 'claude-code', engineSessionId: 'abc' }, 'done');
    await log.commitStep('s', { messages: [{ message: { role: 'user', content: 'CRITIQUE: more' } }] });
    const resumed = await openEngineRun(input(log), 'claude-code');
    expect(resumed.resume).toEqual({ engine: 'claude-code', engineSessionId: 'abc' });
    expect(resumed.prompt).toMatch(/^Your previous run was interrupted/);
  });
});
