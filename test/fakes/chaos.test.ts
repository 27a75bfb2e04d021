import { describe, expect, it } from 'vitest';
import { createChaos } from './chaos.ts';
import { startFakeOpenAI } from './fake-openai.ts';
import { startFakeLinear } from './linear/fake-linear.ts';

describe('chaos for the fakes', () => {
  it('decides each request from the seed, the service, the operation and its count', () => {
    const kinds = ['rate-limited', 'overloaded'] as const;
    const faults = (seed: number, operations: string[]) => {
      const chaos = createChaos({ rate: 0.5, seed });
      return operations.map((op) => chaos.roll('anthropic', op, kinds) ?? '-');
    };
    const calls = Array.from({ length: 40 }, () => 'messages');
    expect(faults(7, calls)).toEqual(faults(7, calls));
    expect(faults(7, calls)).not.toEqual(faults(8, calls));
    // Another operation's requests in between change nothing for this one.
    const mixed = calls.flatMap((op) => [op, 'other']);
    expect(faults(7, mixed).filter((_, i) => i % 2 === 0)).toEqual(faults(7, calls));
    const picked = faults(7, calls).filter((f) => f !== '-');
    expect(picked.length).toBeGreaterThan(10);
    expect(picked.length).toBeLessThan(30);
    const none = createChaos({ rate: 0, seed: 7 });
    expect(calls.map((op) => none.roll('anthropic', op, kinds))).toEqual(calls.map(() => undefined));
    expect(none.injected).toEqual([]);
    expect(() => createChaos({ rate: 2, seed: 1 })).toThrow('chaos rate 2 is not within [0, 1]');
  });

  it("decides a subject's requests apart from every other subject's, and records the subject", () => {
    const kinds = ['rate-limited', 'overloaded'] as const;
    const faults = (subjects: string[]) => {
      const chaos = createChaos({ rate: 0.5, seed: 11 });
      const picked = subjects.map((subject) => chaos.roll('anthropic', 'messages', kinds, subject) ?? '-');
      return { picked, injected: chaos.injected };
    };
    const alone = Array.from({ length: 30 }, () => 'task-0');
    // Another session's requests in between, in any order, change nothing for task-0.
    const interleaved = alone.flatMap((s, i) => (i % 3 === 0 ? ['task-1', s, 'task-1'] : [s]));
    const ofTask0 = (run: ReturnType<typeof faults>, subjects: string[]) =>
      run.picked.filter((_, i) => subjects[i] === 'task-0');
    expect(ofTask0(faults(interleaved), interleaved)).toEqual(faults(alone).picked);
    expect(faults(alone).injected.every((f) => f.subject === 'task-0')).toBe(true);
    expect(faults(alone).injected.length).toBeGreaterThan(0);
  });

  it('Linear answers 429 or 503 with Retry-After, recorded as injected, not as refused', async () => {
    const chaos = createChaos({ rate: 1, seed: 3 });
    const linear = await startFakeLinear({ chaos });
    try {
      const res = await fetch(linear.apiUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${linear.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'query Me { viewer { id } }' }),
      });
      expect([429, 503]).toContain(res.status);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(chaos.injected).toEqual([
        { service: 'linear', operation: 'Me', kind: res.status === 429 ? 'rate-limited' : 'unavailable' },
      ]);
      expect(linear.operations).toEqual([]);
      expect(linear.refused).toEqual([]);
    } finally {
      await linear.close();
    }
  });

  it('OpenAI answers a fault of the service in place of the scripted answer', async () => {
    const chaos = createChaos({ rate: 1, seed: 5 });
    const openai = await startFakeOpenAI({ chat: () => ({ text: 'Hello there, how are you?' }), chaos });
    try {
      const res = await fetch(`${openai.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-openai-key', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-5', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const text = await res.text();
      const [fault] = chaos.injected;
      expect(fault).toMatchObject({ service: 'openai', operation: 'chat' });
      const expected = {
        'rate-limited': () => expect(res.status).toBe(429),
        overloaded: () => expect(res.status).toBe(503),
        'stream-cut': () => expect(text).not.toContain('[DONE]'),
        'error-event': () => expect(text).toContain('"error"'),
      }[fault!.kind as 'rate-limited'];
      expected();
      expect(text).not.toContain('finish_reason":"stop"');
      expect(openai.rejections).toEqual([]);
    } finally {
      await openai.close();
    }
  });
});
