import { createHmac, randomUUID } from 'node:crypto';

/** One attempt, as GitHub lists it (hook-delivery-item). */
type Attempt = {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  duration: number;
  status: string;
  status_code: number;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
  throttled_at: null;
};

type Sent = { guid: string; event: string; body: string; attempt: Attempt };

/**
 * The App's webhook, delivered the way GitHub delivers it and listed the way GET
 * /app/hook/deliveries lists it: every attempt with its outcome (a connection that failed is
 * "failed to connect", 502, as GitHub's example shows), newest first, in pages with a cursor in the
 * link header; a redelivery (POST /app/hook/deliveries/{id}/attempts) is sent later, on its own,
 * with the same event GUID. GitHub never redelivers by itself.
 */
export function createHookDeliveries(nextId: () => number) {
  let target: { url: string; secret: string } | undefined;
  const sent: Sent[] = [];
  const pending = new Set<Promise<void>>();

  async function attempt(guid: string, event: string, body: string, redelivery: boolean): Promise<Attempt> {
    const signature = `sha256=${createHmac('sha256', target!.secret).update(body).digest('hex')}`;
    const started = Date.now();
    let statusCode = 502;
    let status = 'failed to connect';
    try {
      const response = await fetch(target!.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'GitHub-Hookshot/fake',
          'x-github-event': event,
          'x-github-delivery': guid,
          'x-github-hook-id': '1',
          'x-github-hook-installation-target-type': 'integration',
          'x-github-hook-installation-target-id': '4242',
          'x-hub-signature-256': signature,
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await response.arrayBuffer();
      statusCode = response.status;
      status = response.ok ? 'OK' : response.statusText || 'Error';
    } catch {
      // No answer: GitHub records it as failed to connect.
    }
    const payload = JSON.parse(body) as {
      action?: string;
      installation?: { id?: number };
      repository?: { id?: number };
    };
    const record: Attempt = {
      id: nextId(),
      guid,
      delivered_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      redelivery,
      duration: (Date.now() - started) / 1000,
      status,
      status_code: statusCode,
      event,
      action: payload.action ?? null,
      installation_id: payload.installation?.id ?? null,
      repository_id: payload.repository?.id ?? null,
      throttled_at: null,
    };
    sent.push({ guid, event, body, attempt: record });
    return record;
  }

  return {
    /** Where the App's webhook points (its URL and secret). */
    point(url: string, secret: string): void {
      target = { url, secret };
    },
    /** GitHub delivers an event: one attempt, its outcome recorded. */
    async deliver(event: string, payload: unknown): Promise<Attempt> {
      if (!target) throw new Error('the fake App has no webhook URL: call deliveries.point first');
      return attempt(randomUUID(), event, JSON.stringify(payload), false);
    },
    /** Every attempt, oldest first. */
    attempts: (): Attempt[] => sent.map((s) => s.attempt),
    /** GET /app/hook/deliveries: newest first; `cursor` is where a page starts. */
    list(perPage: number, cursor: string | null, pageUrl: URL): { items: Attempt[]; link?: string } {
      const newestFirst = sent.map((s) => s.attempt).reverse();
      const start = cursor ? newestFirst.findIndex((a) => String(a.id) === cursor) : 0;
      const items = start < 0 ? [] : newestFirst.slice(start, start + perPage);
      const next = start < 0 ? undefined : newestFirst[start + perPage];
      if (!next) return { items };
      const url = new URL(pageUrl);
      url.searchParams.set('cursor', String(next.id));
      return { items, link: `<${url}>; rel="next"` };
    },
    /** POST /app/hook/deliveries/{id}/attempts: false for an unknown id; else sent again shortly, on its own. */
    redeliver(id: number): boolean {
      const original = sent.find((s) => s.attempt.id === id);
      if (!original || !target) return false;
      const again = new Promise<void>((resolve) => setTimeout(resolve, 50))
        .then(() => attempt(original.guid, original.event, original.body, true))
        .then(() => undefined);
      pending.add(again);
      void again.finally(() => pending.delete(again));
      return true;
    },
    /** Waits for redeliveries asked for and not yet sent. */
    async settled(): Promise<void> {
      await Promise.all([...pending]);
    },
  };
}
