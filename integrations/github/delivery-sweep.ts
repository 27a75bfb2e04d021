import { type Repeating, repeatEvery } from './repeat-every.ts';
import type { Logger } from 'pino';
import type { GitHubClient } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';
import { lostDeliveries, type DeliveryAttempt } from './lost-deliveries.ts';

type SweepDeps = {
  client: Pick<GitHubClient, 'app'>;
  store: Pick<GitHubStore, 'deliveriesSince' | 'saveDeliveriesSince'>;
  log: Logger;
  /** Between looks. */
  intervalMs: number;
  /** How far back the first look ever goes (GitHub keeps deliveries three days). */
  firstLookbackMs: number;
  now?: () => Date;
};

const pageSize = 100;
/** A bound on one look: 50 pages of 100 is more than a busy App's deliveries between two looks. */
const maxPages = 50;

/**
 * GitHub never redelivers a webhook by itself: one that met Patchbay down (its database away, a
 * restart) is lost unless someone asks. At start and every `intervalMs`, this asks GitHub for the
 * App's deliveries since the last look and has every event that never reached Patchbay sent again
 * (POST /app/hook/deliveries/{id}/attempts). The redelivery is a webhook like any other, so the
 * inbound dedupe takes it once, whichever process or look asked for it.
 */
export class DeliverySweep {
  readonly #deps: SweepDeps;
  #repeating: Repeating | undefined;
  readonly #stopped = new AbortController();

  constructor(deps: SweepDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#repeating = repeatEvery(
      this.#deps.intervalMs,
      () => this.sweep(),
      (error) => this.#deps.log.warn({ err: error }, 'could not look for lost GitHub deliveries'),
    );
  }

  async stop(): Promise<void> {
    this.#stopped.abort();
    await this.#repeating?.stop();
  }

  /** One look: lists the deliveries since the saved mark, asks for the lost ones, moves the mark. */
  async sweep(): Promise<void> {
    const { store, log } = this.#deps;
    const now = this.#deps.now?.() ?? new Date();
    const since = (await store.deliveriesSince()) ?? new Date(now.getTime() - this.#deps.firstLookbackMs);
    const attempts = await this.#attemptsSince(since);
    const lost = lostDeliveries(attempts, since);
    for (const attempt of lost.redeliver) await this.#redeliver(attempt);
    if (lost.givenUp.length) log.warn({ guids: lost.givenUp }, 'GitHub deliveries that failed every redelivery');
    await store.saveDeliveriesSince(lost.nextSince);
  }

  /** Every attempt delivered at or after `since`, newest first, page by page (GitHub's cursor in the link header). */
  async #attemptsSince(since: Date): Promise<DeliveryAttempt[]> {
    const attempts: DeliveryAttempt[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page += 1) {
      const response = await this.#deps.client.app.octokit.request('GET /app/hook/deliveries', {
        per_page: pageSize,
        ...(cursor && { cursor }),
        request: { signal: this.#stopped.signal },
      });
      for (const d of response.data) {
        const deliveredAt = new Date(d.delivered_at);
        if (deliveredAt < since) return attempts;
        attempts.push({
          id: Number(d.id),
          guid: d.guid,
          deliveredAt,
          redelivery: d.redelivery,
          statusCode: Number(d.status_code),
        });
      }
      cursor = nextCursor(response.headers.link);
      if (!cursor || response.data.length === 0) return attempts;
    }
    return attempts;
  }

  async #redeliver(attempt: DeliveryAttempt): Promise<void> {
    await this.#deps.client.app.octokit.request('POST /app/hook/deliveries/{delivery_id}/attempts', {
      delivery_id: attempt.id,
      request: { signal: this.#stopped.signal },
    });
    this.#deps.log.info(
      { guid: attempt.guid, delivery: attempt.id, status: attempt.statusCode },
      'asked GitHub to redeliver a webhook that never reached Patchbay',
    );
  }
}

/** The `cursor` of the `rel="next"` link, when there is a next page. */
export function nextCursor(link: string | undefined): string | undefined {
  const next = link?.split(',').find((part) => /rel="next"/.test(part));
  const url = next && /<([^>]+)>/.exec(next)?.[1];
  return url ? (new URL(url).searchParams.get('cursor') ?? undefined) : undefined;
}
