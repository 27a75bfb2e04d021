import { type Chaos, createChaos } from './chaos.ts';

export type ScriptedChaos = Chaos & {
  /** Replaces the faults still to come with these. */
  script(faults: Record<string, string[]>): void;
};

/**
 * A chaos that injects exactly the faults a test names, per `service operation`, in order ('-'
 * answers that request normally), each checked to be one the fake offers there; nothing
 * anywhere else. What it injects is recorded in `injected`, as `createChaos` records it.
 */
export function scriptedChaos(faults: Record<string, string[]> = {}): ScriptedChaos {
  const queue = (next: Record<string, string[]>) => new Map(Object.entries(next).map(([k, v]) => [k, [...v]]));
  let queues = queue(faults);
  const chaos = createChaos({ rate: 0, seed: 0 });
  return {
    ...chaos,
    roll<K extends string>(service: string, operation: string, kinds: readonly K[]): K | undefined {
      const kind = queues.get(`${service} ${operation}`)?.shift();
      if (kind === undefined || kind === '-') return undefined;
      if (!kinds.includes(kind as K))
        throw new Error(`${service} ${operation} does not offer ${kind}: ${kinds.join(', ')}`);
      chaos.injected.push({ service, operation, kind });
      return kind as K;
    },
    script(next) {
      queues = queue(next);
    },
  };
}
