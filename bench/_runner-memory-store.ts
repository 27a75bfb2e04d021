import type { RunnerLog } from '../src/agent/agent-runner.ts';
import type { Actor } from '../src/core/actor.ts';
import { SessionEvent, type StoredEvent } from '../src/core/events.ts';
import type { SessionRecord } from '../src/core/session-record.ts';
import type { NewEvent, TranscriptEntry } from '../src/core/run-log.ts';

/**
 * The runner's store kept in process memory: the no-persistence baseline for bench/runner-overhead.ts.
 * It keeps the store's contract (events validated and numbered, dedupe keys honoured, steps applied
 * whole) so the runner does the same work against it; only the database round trips are gone.
 */
export function createMemoryRunnerStore(): RunnerLog & { create(id: string, prompt: string, requester: Actor): void } {
  const sessions = new Map<
    string,
    { record: SessionRecord; events: StoredEvent[]; keys: Set<string>; transcript: TranscriptEntry[] }
  >();

  const must = (id: string) => {
    const s = sessions.get(id);
    if (!s) throw new Error(`session ${id} does not exist`);
    return s;
  };
  const append = (id: string, events: readonly NewEvent[]): StoredEvent[] => {
    const s = must(id);
    const stored: StoredEvent[] = [];
    for (const { event, dedupeKey } of events) {
      const parsed = SessionEvent.parse(event);
      if (dedupeKey) {
        if (s.keys.has(dedupeKey)) continue;
        s.keys.add(dedupeKey);
      }
      s.record.lastSeq += 1;
      const e = { sessionId: id, seq: s.record.lastSeq, at: new Date().toISOString(), event: parsed };
      s.events.push(e);
      stored.push(e);
    }
    return stored;
  };
  const copy = <T>(value: T): T => structuredClone(value);

  return {
    create(id, prompt, requester) {
      const now = new Date().toISOString();
      const record: SessionRecord = {
        id,
        parentId: null,
        createdAt: now,
        updatedAt: now,
        status: 'running',
        repo: 'bench/repo',
        prompt,
        title: prompt,
        requester,
        baseBranch: null,
        branch: null,
        lastSeq: 0,
        pendingQuestion: null,
        result: null,
        error: null,
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
      };
      sessions.set(id, { record, events: [], keys: new Set(), transcript: [] });
      append(id, [{ event: { type: 'user-message', actor: requester, text: prompt } }]);
    },
    async get(id) {
      const s = sessions.get(id);
      return s && copy(s.record);
    },
    async transcript(id) {
      return copy(must(id).transcript);
    },
    async events(id, options = {}) {
      const after = options.afterSeq ?? 0;
      const types = options.types?.length ? new Set(options.types) : undefined;
      return copy(
        must(id)
          .events.filter((e) => e.seq > after && (!types || types.has(e.event.type)))
          .slice(0, options.limit ?? 10_000),
      );
    },
    async commitStep(id, step) {
      const s = must(id);
      for (const m of step.messages ?? [])
        s.transcript.push({ idx: s.transcript.length, message: copy(m.message), eventSeq: m.eventSeq ?? null });
      const stored = append(id, step.events ?? []);
      if (step.usage) {
        const u = s.record.usage;
        u.inputTokens += step.usage.inputTokens;
        u.outputTokens += step.usage.outputTokens;
        u.cacheReadTokens += step.usage.cacheReadTokens;
        u.cacheWriteTokens += step.usage.cacheWriteTokens;
      }
      if (step.patch?.pendingQuestion !== undefined) s.record.pendingQuestion = step.patch.pendingQuestion;
      return stored;
    },
    async replaceTranscript(id, messages, events) {
      const s = must(id);
      s.transcript = messages.map((m, idx) => ({ idx, message: copy(m.message), eventSeq: m.eventSeq ?? null }));
      append(id, events);
    },
  };
}
