import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type CodexStreamState, translateCodexLine, unwrapShell } from '../../src/engines/codex-stream.ts';
import type { EngineStreamStep } from '../../src/engines/engine-stream.ts';
import { type OpencodeStreamState, opencodeResult, translateOpencodeLine } from '../../src/engines/opencode-stream.ts';

/** Streams recorded from the real CLIs (see test/fixtures/engines/SOURCES.md). */
function recorded(name: string): string[] {
  return readFileSync(new URL(`../fixtures/engines/${name}`, import.meta.url), 'utf8')
    .split('\n')
    .filter(Boolean);
}

function codexState(runKey = 'r1'): CodexStreamState {
  let t = 1000;
  return { turn: 3, workdir: '/workspace', runKey, started: new Map(), lastText: '', now: () => (t += 5) };
}

function events(steps: EngineStreamStep[]) {
  return steps.flatMap((s) => (s.kind === 'events' ? s.events.map((e) => e.event) : []));
}

describe('Codex exec --json, as recorded from @openai/codex', () => {
  it('becomes the thread id, the text, a command and a file edit as paired steps, and the last text as the result', () => {
    const state = codexState();
    const steps = recorded('codex-edit.jsonl').map((line) => translateCodexLine(line, state));
    expect(steps[0]).toEqual({ kind: 'session', engineSessionId: '01a24e12-fea0-7303-b8b7-258eb3133cb1' });
    expect(events(steps)).toEqual([
      { type: 'assistant-message', text: 'I will read the file.', turn: 3 },
      {
        type: 'tool-start',
        callId: 'codex:r1:item_2',
        name: 'run_shell',
        input: { command: 'cat a.txt && echo $RELAY_TOKEN-seen' },
      },
      {
        type: 'tool-end',
        callId: 'codex:r1:item_2',
        name: 'run_shell',
        isError: false,
        output: 'hi\nrelay-token-xyz-seen\n',
        durationMs: 5,
      },
      {
        type: 'tool-start',
        callId: 'codex:r1:item_3.0',
        name: 'edit_file',
        input: { path: 'a.txt', change: 'update' },
      },
      {
        type: 'tool-end',
        callId: 'codex:r1:item_3.0',
        name: 'edit_file',
        isError: false,
        output: 'update a.txt',
        durationMs: 0,
      },
      { type: 'assistant-message', text: 'Changed a.txt to say hello world.', turn: 4 },
    ]);
    expect(steps.at(-1)).toEqual({ kind: 'result', ok: true, text: 'Changed a.txt to say hello world.' });
  });

  it('keys a resumed run apart from the first: Codex numbers items from item_0 again', () => {
    const first = recorded('codex-edit.jsonl').flatMap((l) => events([translateCodexLine(l, codexState('a'))]));
    const second = recorded('codex-resume.jsonl').map((l) => translateCodexLine(l, codexState('b')));
    const keys = (steps: EngineStreamStep[]) =>
      steps.flatMap((s) => (s.kind === 'events' ? s.events.map((e) => e.dedupeKey) : []));
    expect(first.length).toBeGreaterThan(0);
    expect(keys(second)).toEqual(['engine-text:b:item_0']);
    expect(second[0]).toEqual({ kind: 'session', engineSessionId: '01a24e12-fea0-7303-b8b7-258eb3133cb1' });
  });

  it('marks a failed command an error with its exit code, and a turn the relay refused as a failed result', () => {
    const state = codexState();
    const failed = events(recorded('codex-failed-command.jsonl').map((l) => translateCodexLine(l, state)));
    expect(failed.filter((e) => e.type === 'tool-end')).toMatchObject([
      { isError: true, output: '(exit code 3)' },
      { isError: false, output: 'slept\n' },
    ]);
    const refused = recorded('codex-relay-refused.jsonl').map((l) => translateCodexLine(l, codexState()));
    expect(events(refused)).toEqual([]);
    expect(refused.at(-1)).toMatchObject({ kind: 'result', ok: false, text: expect.stringContaining('403 Forbidden') });
  });

  it('ignores what is not its JSON: stray output, unknown shapes', () => {
    const state = codexState();
    expect(translateCodexLine('Reading additional input from stdin...', state)).toEqual({ kind: 'ignored' });
    expect(translateCodexLine('{"type":"item.completed","item":{"type":"agent_message"}}', state)).toEqual({
      kind: 'ignored',
    });
    expect(translateCodexLine('[1,2]', state)).toEqual({ kind: 'ignored' });
  });

  it.each([
    [`/bin/bash -lc 'npm test'`, 'npm test'],
    [`/bin/bash -lc 'echo '"'"'hi'"'"''`, `echo 'hi'`],
    [`/bin/sh -c 'ls'`, 'ls'],
    ['python3 x.py', 'python3 x.py'],
  ])('shows %s as %s', (wrapped, shown) => {
    expect(unwrapShell(wrapped)).toBe(shown);
  });
});

function opencodeState(): OpencodeStreamState {
  return { turn: 0, workdir: '/workspace', sessionId: undefined, lastText: '', error: undefined };
}

describe('OpenCode run --format json, as recorded from opencode-ai', () => {
  it('becomes the session id, the text, the command (its exit code an error) and each patched file', () => {
    const state = opencodeState();
    const steps = recorded('opencode-edit.jsonl').flatMap((line) => translateOpencodeLine(line, state));
    expect(steps[0]).toEqual({ kind: 'session', engineSessionId: 'ses_db1e49bfeffe694DmvV1JDl0I9' });
    expect(steps.filter((s) => s.kind === 'session')).toHaveLength(1);
    expect(events(steps)).toEqual([
      { type: 'assistant-message', text: 'I will read the file.', turn: 0 },
      {
        type: 'tool-start',
        callId: 'opencode:prt_24e1ba9c5001FuF6mOIqaNrTFy',
        name: 'run_shell',
        input: { command: 'cat a.txt; exit 2' },
      },
      {
        type: 'tool-end',
        callId: 'opencode:prt_24e1ba9c5001FuF6mOIqaNrTFy',
        name: 'run_shell',
        isError: true,
        output: 'hi\n\n(exit code 2)',
        durationMs: 2615,
      },
      {
        type: 'tool-start',
        callId: 'opencode:prt_24e1bbc6d001Y5HDkJgknqLFiq.0',
        name: 'edit_file',
        input: { path: 'a.txt', change: 'update' },
      },
      {
        type: 'tool-end',
        callId: 'opencode:prt_24e1bbc6d001Y5HDkJgknqLFiq.0',
        name: 'edit_file',
        isError: false,
        output: 'Success. Updated the following files:\nM a.txt',
        durationMs: 137,
      },
      { type: 'assistant-message', text: 'Changed a.txt to say hello world.', turn: 2 },
    ]);
    expect(opencodeResult(state, 0)).toEqual({ kind: 'result', ok: true, text: 'Changed a.txt to say hello world.' });
  });

  it('ends failed with the error OpenCode reported, or its exit code', () => {
    const state = opencodeState();
    translateOpencodeLine(
      '{"type":"error","timestamp":1,"sessionID":"ses_x","error":{"name":"APIError","data":{"message":"Patchbay relay stopped this run: the run spent $0.10 of its $0.05 budget","statusCode":403}}}',
      state,
    );
    expect(opencodeResult(state, 1)).toEqual({
      kind: 'result',
      ok: false,
      text: 'Patchbay relay stopped this run: the run spent $0.10 of its $0.05 budget',
    });
    expect(opencodeResult({ ...opencodeState(), sessionId: 'ses_x' }, 137)).toMatchObject({
      ok: false,
      text: 'OpenCode exited with code 137',
    });
    expect(opencodeResult(opencodeState(), 0)).toBeUndefined();
  });

  it('resumes the same session id', () => {
    const state = opencodeState();
    const steps = recorded('opencode-resume.jsonl').flatMap((line) => translateOpencodeLine(line, state));
    expect(steps[0]).toEqual({ kind: 'session', engineSessionId: 'ses_db1e49bfeffe694DmvV1JDl0I9' });
    expect(opencodeResult(state, 0)).toMatchObject({ ok: true, text: 'Reworked after the critique.' });
  });
});
