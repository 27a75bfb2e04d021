import type { SessionStatus } from '../../src/core/session-status.ts';
import type { Patchbay } from '../../src/main.ts';

/** Polls until the session reaches one of `statuses`, failing with its event log otherwise. */
export async function waitForStatus(app: Patchbay, sessionId: string, statuses: SessionStatus[], timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const session = await app.store.get(sessionId);
    if (session && statuses.includes(session.status)) return session;
    if (Date.now() > deadline) {
      const events = await app.store.events(sessionId);
      throw new Error(
        `session ${sessionId} is ${session?.status}, not ${statuses.join('|')}; events:\n${events.map((e) => JSON.stringify(e.event)).join('\n')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function waitFor<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until the inbound pipeline has worked every delivery it stored (none is left pending) and
 * returns them. A delivery is stored before its sender is acked, and its mark is set only after its
 * handling and replies: once every mark is set, whatever the deliveries cause has happened, so a
 * test can assert what did not happen without waiting a fixed time.
 */
export async function deliveriesWorked(app: Pick<Patchbay, 'inbound'>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await app.inbound.list({ limit: 1000 });
    const pending = all.filter((d) => d.status === 'pending');
    if (pending.length === 0) return all;
    if (Date.now() > deadline) {
      throw new Error(
        `deliveries still pending after ${timeoutMs} ms: ${pending.map((d) => `${d.source} ${d.kind} (${d.attempts} attempts${d.error ? `, last error: ${d.error}` : ''})`).join('; ')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
