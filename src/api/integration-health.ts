import type { Logger } from 'pino';
import type { IntegrationModule } from '../../integrations/integration-module.ts';
import { describeError, isPatchbayError } from '../core/errors.ts';

/** One integration's state, as `/healthz` reports it. */
export type IntegrationState =
  | { ok: true }
  | { ok: false; status: 'unreachable' | 'refused'; error: string; attempts: number; retryInSeconds: number };

export type StartRetry = { firstDelayMs: number; maxDelayMs: number };

/** About a minute between attempts at most: a service back from an outage is noticed soon. */
export const defaultStartRetry: StartRetry = { firstDelayMs: 2_000, maxDelayMs: 60_000 };

/**
 * Each integration's state by name. Made before the server whose `/healthz` reports it, and filled
 * by `startIntegrations` once the server listens; empty in a process that starts none.
 */
export type IntegrationHealth = {
  report(): Record<string, IntegrationState>;
  set(name: string, state: IntegrationState): void;
};

/** No integration's state yet: `/healthz` reports none until they start. */
export function createIntegrationHealth(): IntegrationHealth {
  const states = new Map<string, IntegrationState>();
  return {
    report: () => Object.fromEntries(states),
    set: (name, state) => {
      states.set(name, state);
    },
  };
}

export type StartedIntegrations = {
  /** Every started integration by name, for `/healthz`. */
  health(): Record<string, IntegrationState>;
  /** Stops retrying, then stops every integration it started or tried to. */
  stop(): Promise<void>;
};

/**
 * Starts each integration. One that cannot reach its service (a retryable `service_unavailable`)
 * does not stop Patchbay: it is logged once, with the service and the variable to check, reported
 * by `/healthz`, and retried with doubling delays until it connects; the rest serves meanwhile.
 * Any other failure (a refused token, a bad key) fails the start, as before.
 */
export async function startIntegrations(
  modules: readonly IntegrationModule[],
  options: { log: Logger; health: IntegrationHealth; retry?: StartRetry },
): Promise<StartedIntegrations> {
  const starts: IntegrationStarts = {
    retry: options.retry ?? defaultStartRetry,
    log: options.log,
    health: options.health,
    timers: new Set(),
    stopped: false,
  };
  const attempted: IntegrationModule[] = [];
  for (const [index, module] of modules.entries()) {
    if (!module.start) continue;
    const name = module.name ?? `integration-${index + 1}`;
    attempted.push(module);
    if (!(await attemptStart(starts, module, name, 1))) retryInBackground(starts, module, name, 2);
  }
  return {
    health: starts.health.report,
    async stop() {
      starts.stopped = true;
      for (const timer of starts.timers) clearTimeout(timer);
      for (const module of attempted.reverse())
        await module
          .stop?.()
          .catch((error: unknown) =>
            options.log.warn({ integration: module.name, err: error }, 'integration stop failed'),
          );
    },
  };
}

/** What the attempts of one `startIntegrations` share: its retry timers, and whether it was stopped. */
type IntegrationStarts = {
  retry: StartRetry;
  log: Logger;
  health: IntegrationHealth;
  timers: Set<NodeJS.Timeout>;
  stopped: boolean;
};

/** One attempt; true when connected, false when it will be tried again; throws when it never will. */
async function attemptStart(
  starts: IntegrationStarts,
  module: IntegrationModule,
  name: string,
  n: number,
): Promise<boolean> {
  const { retry, log, health } = starts;
  try {
    await module.start!();
  } catch (error) {
    if (!isPatchbayError(error, 'service_unavailable') || !error.retryable) throw error;
    const delay = Math.min(retry.firstDelayMs * 2 ** (n - 1), retry.maxDelayMs);
    // Said once: later attempts only update /healthz (and log at debug).
    if (n === 1)
      log.warn(
        { integration: name, retryInSeconds: delay / 1000 },
        `${describeError(error)}; retrying in the background while the rest of Patchbay serves`,
      );
    else log.debug({ integration: name, attempts: n, err: error }, 'integration still unreachable');
    health.set(name, {
      ok: false,
      status: 'unreachable',
      error: describeError(error),
      attempts: n,
      retryInSeconds: delay / 1000,
    });
    return false;
  }
  if (n > 1) log.info({ integration: name, attempts: n }, `${name} connected after ${n} attempts`);
  health.set(name, { ok: true });
  return true;
}

/** Tries again after the state's delay until connected or stopped; a later refusal stays on /healthz. */
function retryInBackground(starts: IntegrationStarts, module: IntegrationModule, name: string, n: number): void {
  const { retry, log, health, timers } = starts;
  const state = health.report()[name];
  const delay = state && !state.ok ? state.retryInSeconds * 1000 : retry.firstDelayMs;
  const timer = setTimeout(() => {
    timers.delete(timer);
    if (starts.stopped) return;
    attemptStart(starts, module, name, n).then(
      (connected) => connected || retryInBackground(starts, module, name, n + 1),
      (error: unknown) => {
        health.set(name, {
          ok: false,
          status: 'refused',
          error: describeError(error),
          attempts: n,
          retryInSeconds: 0,
        });
        log.error(
          { integration: name, err: error },
          `${name} refused the connection once it could be reached; it stays off until Patchbay restarts`,
        );
      },
    );
  }, delay);
  timer.unref();
  timers.add(timer);
}
