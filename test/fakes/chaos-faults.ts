import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Chaos } from './chaos.ts';

/**
 * The two faults every service's network has, whatever the service: a `slow` answer, held back a
 * bounded while (1 to 2 s, far under any client's timeout, so the client must simply wait), and a
 * connection `dropped` before any answer: the request is read and the socket destroyed with
 * nothing written and nothing done. For a write that is the opposite of a drop after accepting
 * it: the work was NOT done, so a client that takes the silence for success loses it, and one
 * that retries does it exactly once.
 */
export const networkFaults = ['slow', 'dropped'] as const;

const slowestMs = 2_000;
const fastestSlowMs = 1_000;

/**
 * The network's fault for a request the service itself answers normally, rolled at the chaos's
 * rate apart from the service's own faults (its own count, recorded under `<operation> (network)`):
 * the network fails independently of the service's load, and a seed's service faults stay what
 * they were before the network's were added. A slow answer is waited out here; 'dropped' is left
 * to the caller (`dropBeforeAnswer`).
 */
export async function networkFault(
  chaos: Chaos | undefined,
  service: string,
  operation: string,
  subject?: string,
): Promise<'dropped' | undefined> {
  if (!chaos) return undefined;
  const recordedAs = `${operation} (network)`;
  const kind = chaos.roll(service, recordedAs, networkFaults, subject);
  if (kind === 'slow') await answerSlowly(chaos, service, recordedAs);
  return kind === 'dropped' ? kind : undefined;
}

/**
 * How long the n-th slow answer of `operation` on `service` is held back: 1 to 2 s, the same for
 * the same seed (n counted from the faults injected so far, so a seed replays its delays).
 */
export function slowAnswerMs(chaos: Chaos, service: string, operation: string): number {
  const n = chaos.injected.filter(
    (f) => f.service === service && f.operation === operation && f.kind === 'slow',
  ).length;
  const digest = createHash('sha256').update(`${chaos.seed}\0${service}\0${operation}\0slow\0${n}`).digest();
  return fastestSlowMs + Math.floor((digest.readUInt32BE(0) / 2 ** 32) * (slowestMs - fastestSlowMs));
}

/** Holds the answer back as a slow service does; resolves when it may be written. */
export function answerSlowly(chaos: Chaos, service: string, operation: string): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, slowAnswerMs(chaos, service, operation)));
}

/** The connection goes away before a byte of the answer (and before any work was done). */
export function dropBeforeAnswer(res: ServerResponse): void {
  res.socket?.destroy();
}
