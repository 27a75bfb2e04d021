/** A look GitHub is asked for at an interval (polled events, lost deliveries), stopped at shutdown. */
export type Repeating = {
  /** No more looks; waits for the one under way, if any. */
  stop(): Promise<void>;
};

/**
 * Runs `look` now and then every `intervalMs`, never two at once (a tick while one is under way is
 * skipped). A failed look goes to `failed` and the next tick tries again. The timer does not keep
 * the process alive.
 */
export function repeatEvery(
  intervalMs: number,
  look: () => Promise<void>,
  failed: (error: unknown) => void,
): Repeating {
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= look()
      .catch(failed)
      .finally(() => (running = undefined));
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
