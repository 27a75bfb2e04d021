import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import type { ModelMessage } from '../../../src/models/model-provider.ts';
import { createRunnerFixture, type RunnerFixture } from './runner-fixture.ts';

const toolResult = (messages: readonly ModelMessage[], id: string) => {
  const found = messages.find((m) => m.role === 'tool' && m.toolCallId === id);
  if (found?.role !== 'tool') throw new Error(`no result for ${id}`);
  return found;
};

describe('the runner cuts long tool output before it joins the transcript', () => {
  let fx: RunnerFixture;
  beforeAll(async () => {
    fx = await createRunnerFixture();
  });
  afterAll(() => fx.close());

  it('hands the model a cut result with a note saying what was cut and how to see more', async () => {
    // 1..60000 is about 350k characters of stdout: far over every cap on the way.
    const model = createScriptedProvider({
      scenario: [
        { toolCalls: [{ id: 'big', name: 'run_shell', input: { command: 'seq 1 60000' } }] },
        { text: 'Looked at the numbers.' },
      ],
    });
    const sessionId = await fx.newSession('Print a lot of numbers');
    const outcome = await fx.run(sessionId, model, { limits: { maxToolOutputChars: 5_000 } });
    expect(outcome).toEqual({ kind: 'finished', summary: 'Looked at the numbers.' });

    const seen = toolResult(model.requests[1]!.messages, 'big');
    expect(seen.content.length).toBeLessThanOrEqual(5_000);
    // Cut once, by the shell tool at the run's limit: one note, saying how to see the rest.
    expect(seen.content.match(/cut from the middle of/g)).toHaveLength(1);
    expect(seen.content).toMatch(
      /\[\.\.\. \d+ characters \(\d+ lines\) cut from the middle of \d+; redirect the output to a file and read parts of it with read_file or search \.\.\.\]/,
    );
    // Head and tail both survive: the start of the output and its last line.
    expect(seen.content.startsWith('Exit code: 0\nstdout:\n1\n2\n3\n')).toBe(true);
    expect(seen.content.trimEnd().endsWith('60000')).toBe(true);

    // The stored transcript holds the same cut text, so a resumed run sees what the model saw.
    const stored = (await fx.store.transcript(sessionId)).map((e) => e.message);
    expect(toolResult(stored, 'big').content).toBe(seen.content);
  });

  it('applies its default limit of 30,000 characters', async () => {
    const model = createScriptedProvider({
      scenario: [
        { toolCalls: [{ id: 'big2', name: 'run_shell', input: { command: 'seq 1 60000; seq 1 60000 >&2' } }] },
        { text: 'ok' },
      ],
    });
    const sessionId = await fx.newSession('Print to both streams');
    expect((await fx.run(sessionId, model)).kind).toBe('finished');
    const seen = toolResult(model.requests[1]!.messages, 'big2');
    expect(seen.content.length).toBeLessThanOrEqual(30_000);
    expect(seen.content.match(/cut from the middle of/g)).toHaveLength(2);
    expect(seen.content).toContain('stderr:\n1\n2\n3');
    const end = (await fx.store.events(sessionId, { types: ['tool-end'] })).at(-1)?.event;
    expect(end?.type === 'tool-end' && end.output.length).toBeLessThanOrEqual(4_100);
  });

  it('leaves short output as it is', async () => {
    const model = createScriptedProvider({
      scenario: [{ toolCalls: [{ id: 'small', name: 'run_shell', input: { command: 'echo hello' } }] }, { text: 'ok' }],
    });
    const sessionId = await fx.newSession('Say hello');
    await fx.run(sessionId, model, { limits: { maxToolOutputChars: 5_000 } });
    expect(toolResult(model.requests[1]!.messages, 'small').content).toBe('Exit code: 0\nstdout:\nhello\n');
  });
});
