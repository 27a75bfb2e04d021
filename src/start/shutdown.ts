import type { Logger } from 'pino';

/**
 * What a process stops when it closes, made before anything it stops: each part of the start adds
 * its own step once it runs, and a failed start closes what had started by then.
 */
export type Shutdown = {
  /** Runs first when the process closes, before every step (the database stops reconnecting). */
  begin(signal: () => void): void;
  /** A stop step; steps run in the reverse of the order they were added. */
  add(step: () => Promise<unknown>): void;
  /** Runs the steps; one that fails is logged and the rest still run. */
  close(): Promise<void>;
};

/** An empty shutdown: steps are added as the parts they stop start. */
export function createShutdown(log: Logger): Shutdown {
  const beginnings: (() => void)[] = [];
  const steps: (() => Promise<unknown>)[] = [];
  return {
    begin: (signal) => beginnings.push(signal),
    add: (step) => steps.push(step),
    async close() {
      for (const signal of beginnings) signal();
      for (const step of steps.reverse())
        await step().catch((error: unknown) => log.warn({ err: error }, 'shutdown step failed'));
    },
  };
}
