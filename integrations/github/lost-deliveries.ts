/** One attempt to deliver a webhook, as GET /app/hook/deliveries lists it (hook-delivery-item). */
export type DeliveryAttempt = { id: number; guid: string; deliveredAt: Date; redelivery: boolean; statusCode: number };

/** What one look at the App's deliveries decided. */
export type LostDeliveries = {
  /** The newest failed attempt of each event that never reached Patchbay: ask GitHub to send it again. */
  redeliver: DeliveryAttempt[];
  /** Events that failed every attempt, the redeliveries Patchbay asked for included: left alone. */
  givenUp: string[];
  /** Where the next look starts: the first attempt of the oldest event still in doubt, else the newest seen. */
  nextSince: Date;
};

/** How many times Patchbay asks again for one event (a delivery that fails for good is not asked forever). */
export const maxRedeliveries = 3;

/**
 * Whether Patchbay answered the attempt itself: took it (202), knew it (200), or refused it on
 * purpose (401 a bad signature, 413 too large: the same bytes again would meet the same answer).
 * No answer (0), a timeout, a rate limit or a 5xx (the database was down) means it never arrived.
 */
const reachedPatchbay = (statusCode: number) =>
  statusCode > 0 && statusCode < 500 && statusCode !== 408 && statusCode !== 429;

/**
 * The events among `attempts` (every attempt delivered since `since`) that GitHub delivered and
 * Patchbay never took: every attempt failed (a 5xx while the database was down, no answer, a
 * timeout). Pure, so the rules are table-tested.
 */
export function lostDeliveries(attempts: readonly DeliveryAttempt[], since: Date): LostDeliveries {
  const byEvent = new Map<string, DeliveryAttempt[]>();
  for (const a of attempts) byEvent.set(a.guid, [...(byEvent.get(a.guid) ?? []), a]);
  const redeliver: DeliveryAttempt[] = [];
  const givenUp: string[] = [];
  let oldestInDoubt: Date | undefined;
  for (const [guid, tries] of byEvent) {
    if (tries.some((t) => reachedPatchbay(t.statusCode))) continue;
    const asked = tries.filter((t) => t.redelivery).length;
    if (asked >= maxRedeliveries) {
      givenUp.push(guid);
      continue;
    }
    const newest = tries.reduce((a, b) => (b.deliveredAt > a.deliveredAt ? b : a));
    const first = tries.reduce((a, b) => (b.deliveredAt < a.deliveredAt ? b : a));
    redeliver.push(newest);
    if (!oldestInDoubt || first.deliveredAt < oldestInDoubt) oldestInDoubt = first.deliveredAt;
  }
  const newestSeen = new Date(Math.max(since.getTime(), ...attempts.map((a) => a.deliveredAt.getTime())));
  return { redeliver, givenUp, nextSince: oldestInDoubt ?? newestSeen };
}
