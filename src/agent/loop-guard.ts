import { maskLogNoise } from '../core/log-noise.ts';

/**
 * Ends a run that keeps making the same failing call with nothing new to show for it. A call is
 * the same when its tool name and input are the same; nothing new means the same error output once
 * its noise is masked (durations, timestamps, pids, temp paths: the checks' own normalisation), so
 * a test run that differs only in its timing line still counts as a repeat. Any success, or a
 * different error, resets the count for that call.
 */
export type LoopGuardVerdict = { stop: false } | { stop: true; reason: string };

export type LoopGuard = {
  record(call: { name: string; input: unknown; isError: boolean; output: string }): LoopGuardVerdict;
};

export function createLoopGuard(options: { maxRepeats?: number } = {}): LoopGuard {
  const maxRepeats = options.maxRepeats ?? 3;
  const failures = new Map<string, { output: string; count: number }>();
  return {
    record({ name, input, isError, output }) {
      const key = `${name}\u0000${stableStringify(input)}`;
      if (!isError) {
        failures.delete(key);
        return { stop: false };
      }
      const seen = maskLogNoise(output).join('\n');
      const previous = failures.get(key);
      const count = previous && previous.output === seen ? previous.count + 1 : 1;
      failures.set(key, { output: seen, count });
      if (count < maxRepeats) return { stop: false };
      return {
        stop: true,
        reason: `the agent repeated the same failing ${name} call ${count} times with the same result: ${firstLine(output)}`,
      };
    },
  };
}

export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

function firstLine(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}...` : line;
}
