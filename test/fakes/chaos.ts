import { createHash } from 'node:crypto';

/**
 * Chaos for the loopback fakes: each fake given the same `Chaos` answers a share (`rate`) of its
 * requests with one of its service's documented transient faults instead of (or, for a dropped
 * connection, after) the real answer. Whether the n-th request of an operation is faulted, and
 * how, is a hash of the seed, the service, the operation, the request's subject when the fake
 * names one (the repository, channel or agent session it concerns) and n, counted per subject: the
 * same seed gives the same faults to the same subject however the services' requests interleave. Only faults a client is expected to survive
 * are injected (never a 401 or a 404), and each one is recorded in `injected`; a fake's refusals
 * (malformed calls) stay in its own list.
 */
export type ChaosOptions = { rate: number; seed: number };

/** `subject`: what the faulted request concerned (a repository, a channel, …), when the fake said. */
export type InjectedFault = { service: string; operation: string; kind: string; subject?: string };

export type Chaos = ChaosOptions & {
  /** Every fault injected so far, in order, by every fake sharing this chaos. */
  injected: InjectedFault[];
  /**
   * One of `kinds` for this request of `operation` on `service` (about `subject`, when given), or
   * undefined to answer it normally; a fault picked is recorded. An empty `kinds` list injects nothing.
   */
  roll<K extends string>(service: string, operation: string, kinds: readonly K[], subject?: string): K | undefined;
};

export function createChaos(options: ChaosOptions): Chaos {
  if (!(options.rate >= 0 && options.rate <= 1)) throw new Error(`chaos rate ${options.rate} is not within [0, 1]`);
  const injected: InjectedFault[] = [];
  const seen = new Map<string, number>();
  return {
    ...options,
    injected,
    roll(service, operation, kinds, subject) {
      const key = subject === undefined ? `${service}\0${operation}` : `${service}\0${operation}\0${subject}`;
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      if (kinds.length === 0) return undefined;
      const [chance, choice] = uniforms(`${options.seed}\0${key}\0${n}`);
      if (chance >= options.rate) return undefined;
      const kind = kinds[Math.floor(choice * kinds.length)]!;
      injected.push({ service, operation, kind, ...(subject !== undefined && { subject }) });
      return kind;
    },
  };
}

/** Injected faults counted by `service kind`, for a report. */
export function countFaults(faults: readonly InjectedFault[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const f of faults) counts[`${f.service} ${f.kind}`] = (counts[`${f.service} ${f.kind}`] ?? 0) + 1;
  return counts;
}

/** Two numbers in [0, 1) from a string, by SHA-256. */
function uniforms(text: string): [number, number] {
  const digest = createHash('sha256').update(text).digest();
  return [digest.readUInt32BE(0) / 2 ** 32, digest.readUInt32BE(4) / 2 ** 32];
}
