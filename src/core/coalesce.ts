/**
 * "Run again if asked while running", once: `run(key)` starts `work(key)` unless a run for that key
 * is under way; then it asks for one more run after the current one (however many times it is
 * asked meanwhile) and returns the current run. Keys are independent. A run that throws still
 * gives way to the run asked for meanwhile; the throw reaches the callers of the run that threw.
 */
export type Coalescer<K> = {
  run(key: K): Promise<void>;
  /** Whether a run for the key is under way. */
  running(key: K): boolean;
  /** Resolves when every run under way now has ended (for shutdown). */
  settled(): Promise<void>;
};

export function coalesce<K>(
  work: (key: K) => Promise<void>,
  options: { rerunIf?: (key: K) => boolean } = {},
): Coalescer<K> {
  const runs = new Map<K, Promise<void>>();
  const again = new Set<K>();

  function run(key: K): Promise<void> {
    const current = runs.get(key);
    if (current) {
      again.add(key);
      return current;
    }
    const next = Promise.resolve()
      .then(() => work(key))
      .finally(() => {
        runs.delete(key);
        if (again.delete(key) && (options.rerunIf?.(key) ?? true)) void run(key).catch(() => undefined);
      });
    runs.set(key, next);
    return next;
  }

  return {
    run,
    running: (key) => runs.has(key),
    async settled() {
      await Promise.allSettled([...runs.values()]);
    },
  };
}

/** The single-key form: one loop, run again once if asked while running. */
export function coalesceOne(
  work: () => Promise<void>,
  options: { rerunIf?: () => boolean } = {},
): { run(): Promise<void>; settled(): Promise<void> } {
  const keyed = coalesce<0>(() => work(), options.rerunIf ? { rerunIf: () => options.rerunIf!() } : {});
  return { run: () => keyed.run(0), settled: () => keyed.settled() };
}
