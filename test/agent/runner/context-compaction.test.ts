import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf } from '../../../src/core/events.ts';
import { summaryPrefix } from '../../../src/models/context-budget.ts';
import type { ModelProvider, TurnRequest } from '../../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../../src/models/scripted-provider.ts';
import {
  bob,
  createRunnerFixture,
  occurrences,
  toolResultsFollowTheirCalls,
  transcriptText,
  type RunnerFixture,
} from './runner-fixture.ts';

const PROMPT = 'Write the progress file (alice-marker-17)';
const BOB = 'Please also keep it sorted (bob-marker-42)';
const STEPS = 14;

type StepModel = ModelProvider & { requests: TurnRequest[]; summaryRequests: TurnRequest[] };

/**
 * The scripted model for a long session: step i runs a shell command with a few kB of output; after
 * STEPS steps it finishes. Summary requests (no tools) get `summary`. `beforeStep` runs before the
 * model answers step i (to add a message from a person, or to stop the run).
 */
function stepModel(options: {
  contextWindow: number;
  summary: string;
  beforeStep?: (step: number) => Promise<void>;
  /** The step to start at: a restarted run continues the script where the last one stopped. */
  startAt?: number;
}): StepModel {
  let step = options.startAt ?? 0;
  const decide = (): ScriptedTurn =>
    step < STEPS
      ? {
          toolCalls: [
            {
              id: `sh-${step}`,
              name: 'run_shell',
              input: { command: `seq 1 600 && echo step-${step} >> progress.txt` },
            },
          ],
        }
      : { text: 'All done.' };
  const scripted = createScriptedProvider({ scenario: () => decide(), contextWindow: options.contextWindow });
  const summaryScript = createScriptedProvider({
    scenario: () => ({ text: options.summary }),
    contextWindow: options.contextWindow,
  });
  const requests: TurnRequest[] = [];
  const summaryRequests: TurnRequest[] = [];
  return {
    name: 'scripted',
    model: 'scripted',
    contextWindow: options.contextWindow,
    requests,
    summaryRequests,
    async runTurn(request) {
      if (request.tools.length === 0) {
        summaryRequests.push(request);
        return summaryScript.runTurn(request);
      }
      await options.beforeStep?.(step);
      requests.push(request);
      const result = await scripted.runTurn(request);
      if (result.stopReason !== 'aborted') step++;
      return result;
    },
  };
}

describe('the runner compacts a long session into a summary turn', () => {
  let fx: RunnerFixture;
  beforeAll(async () => {
    fx = await createRunnerFixture();
  });
  afterAll(() => fx.close());

  const compactions = async (sessionId: string) =>
    (await fx.store.events(sessionId, { types: ['context-compacted'] })).map(
      (e) => e.event as EventOf<'context-compacted'>,
    );

  it("summarizes older turns with the model, keeps people's messages, and finishes", async () => {
    let sessionId = '';
    const model = stepModel({
      contextWindow: 10_000,
      summary: 'SUMMARY-OK: ran seq and appended steps to progress.txt.',
      beforeStep: async (step) => {
        if (step === 1) await fx.store.append(sessionId, [{ event: { type: 'user-message', actor: bob, text: BOB } }]);
      },
    });
    sessionId = await fx.newSession(PROMPT);
    const outcome = await fx.run(sessionId, model);
    expect(outcome).toEqual({ kind: 'finished', summary: 'All done.' });

    // Every step ran exactly once, in order, in the real workspace.
    const sandbox = await fx.sandboxFor(sessionId);
    expect(await sandbox.readFile('progress.txt')).toBe(
      Array.from({ length: STEPS }, (_, i) => `step-${i}\n`).join(''),
    );
    expect((await fx.store.events(sessionId, { types: ['tool-start'] })).length).toBe(STEPS);

    // Compacted at least once, recorded as an event, with the model's summary in it.
    const compacted = await compactions(sessionId);
    expect(compacted.length).toBeGreaterThan(0);
    expect(compacted[0]!.messagesReplaced).toBeGreaterThan(0);
    expect(compacted[0]!.summary).toContain('SUMMARY-OK');
    // Bob spoke at step 1, before the first compaction (the tools' specs take much of the window): his words moved into the summary verbatim.
    expect(compacted[0]!.summary).toContain(`> ${BOB}`);
    expect(model.summaryRequests.length).toBe(compacted.length);
    // The summarizer reads the replaced turns as text, with no tools to call.
    expect(
      model.summaryRequests[0]!.messages[0]!.role === 'user' && model.summaryRequests[0]!.messages[0]!.content,
    ).toContain('run_shell');

    // After the first compaction the model sees the summary turn first, and a smaller transcript.
    const firstAfter = model.requests.find(
      (r) => r.messages[0]?.role === 'user' && r.messages[0].content.startsWith(summaryPrefix),
    );
    expect(firstAfter).toBeDefined();
    const before = model.requests[model.requests.indexOf(firstAfter!) - 1]!;
    expect(firstAfter!.messages.length).toBeLessThan(before.messages.length);
    for (const request of model.requests) expect(toolResultsFollowTheirCalls(request.messages)).toBe(true);

    // No person's message lost or repeated: each appears exactly once in what the model saw last.
    const last = transcriptText(model.requests.at(-1)!.messages);
    expect(occurrences(last, 'alice-marker-17')).toBe(1);
    expect(occurrences(last, 'bob-marker-42')).toBe(1);
    // Bob's message was consumed once, as its own user turn, before any compaction could swallow it.
    const bobTurns = model.requests.filter((r) =>
      r.messages.some((m) => m.role === 'user' && m.content.startsWith('Message from Bob Roe')),
    );
    expect(bobTurns.length).toBeGreaterThan(0);

    // The stored transcript is the compacted one and still accounts for every consumed message.
    const entries = await fx.store.transcript(sessionId);
    expect(entries[0]!.message.role === 'user' && entries[0]!.message.content.startsWith(summaryPrefix)).toBe(true);
    const userEvents = await fx.store.events(sessionId, { types: ['user-message'] });
    expect(Math.max(...entries.map((e) => e.eventSeq ?? 0))).toBe(userEvents.at(-1)!.seq);
    expect(toolResultsFollowTheirCalls(entries.map((e) => e.message))).toBe(true);

    // The summary calls are paid for: their usage is in the log and in the session's totals.
    const usage = (await fx.store.events(sessionId, { types: ['usage'] })).map((e) => e.event as EventOf<'usage'>);
    expect(usage.length).toBe(STEPS + 1 + compacted.length);
    const session = await fx.store.get(sessionId);
    expect(session!.usage.inputTokens).toBe(usage.reduce((sum, u) => sum + u.inputTokens, 0));
  });

  it("falls back to an extract when the summary call gives nothing, and still keeps people's words", async () => {
    const model = stepModel({ contextWindow: 10_000, summary: '' });
    const sessionId = await fx.newSession(PROMPT);
    expect(await fx.run(sessionId, model)).toEqual({ kind: 'finished', summary: 'All done.' });
    const compacted = await compactions(sessionId);
    expect(compacted.length).toBeGreaterThan(0);
    expect(compacted[0]!.summary).toContain('(An extract: the summary call failed.');
    expect(compacted[0]!.summary).toMatch(/Tool calls: run_shell ×\d+/);
    expect(compacted[0]!.summary).toContain('alice-marker-17');
    expect(occurrences(transcriptText(model.requests.at(-1)!.messages), 'alice-marker-17')).toBe(1);
  });

  it('resumes from the compacted transcript after the run dies right after compacting', async () => {
    const stop = new AbortController();
    let sessionId = '';
    let compactedAtStep = -1;
    const first = stepModel({
      contextWindow: 10_000,
      summary: 'SUMMARY-OK',
      beforeStep: async (step) => {
        if (step === 2) await fx.store.append(sessionId, [{ event: { type: 'user-message', actor: bob, text: BOB } }]);
        // The compaction is committed before this request: die here, as a crashed worker would.
        if (first.summaryRequests.length > 0 && compactedAtStep < 0) {
          compactedAtStep = step;
          stop.abort();
        }
      },
    });
    sessionId = await fx.newSession(PROMPT);
    expect((await fx.run(sessionId, first, { signal: stop.signal })).kind).toBe('cancelled');
    expect(compactedAtStep).toBeGreaterThan(2);
    expect((await compactions(sessionId)).length).toBe(1);

    // A new run, as a restarted worker would start it: only the database carries over.
    const second = stepModel({ contextWindow: 10_000, summary: 'SUMMARY-OK', startAt: compactedAtStep });
    expect(await fx.run(sessionId, second)).toEqual({ kind: 'finished', summary: 'All done.' });

    const firstRequest = second.requests[0]!.messages;
    expect(firstRequest[0]!.role === 'user' && firstRequest[0]!.content.startsWith(summaryPrefix)).toBe(true);
    const sandbox = await fx.sandboxFor(sessionId);
    expect(await sandbox.readFile('progress.txt')).toBe(
      Array.from({ length: STEPS }, (_, i) => `step-${i}\n`).join(''),
    );
    const last = transcriptText(second.requests.at(-1)!.messages);
    expect(occurrences(last, 'alice-marker-17')).toBe(1);
    expect(occurrences(last, 'bob-marker-42')).toBe(1);
    // Turn numbers keep counting through compaction and restart: no assistant message was deduped away.
    const turns = (await fx.store.events(sessionId, { types: ['assistant-message'] })).map(
      (e) => (e.event as EventOf<'assistant-message'>).turn,
    );
    expect(turns).toHaveLength(1);
    expect(turns[0]).toBeGreaterThanOrEqual(STEPS);
  });
});
