/**
 * The sending side of bench/webhook-ack.ts, in a worker thread of its own: for each message, posts
 * the signed requests it carries, `concurrency` at a time, and answers with each one's latency.
 */
import { parentPort } from 'node:worker_threads';

type Input = { url: string; requests: { headers: Record<string, string>; body: string }[]; concurrency: number };

async function send({ url, requests, concurrency }: Input): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let next = 0;
  const begin = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests.length) {
        const request = requests[next++]!;
        const t0 = performance.now();
        const res = await fetch(url, { method: 'POST', headers: request.headers, body: request.body });
        await res.arrayBuffer();
        if (res.status >= 300) throw new Error(`${url} answered ${res.status}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - begin) / 1000 };
}

parentPort!.on('message', (input: Input) => {
  send(input).then(
    (result) => parentPort!.postMessage(result),
    (error: unknown) => parentPort!.postMessage({ error: error instanceof Error ? error.message : String(error) }),
  );
});
