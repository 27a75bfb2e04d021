import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { RelayRequest } from './relay-lease.ts';

/** The relay's path for an engine's permission hook (`/engine-relay/gate` through the egress proxy). */
export const GATE_PATH = '/gate';

/** What a hook sends: the engine's id for the tool call and the command it would run. */
const GateCall = z.object({ callId: z.string().max(200), command: z.string().min(1).max(100_000) });

/**
 * POST /gate: an engine's hook asks whether a command may run (the run's gate, createEngineGate).
 * Only an open run's token is heard; the answer is `allow`, `deny` with the reason the engine is
 * shown, or `pending` (held for a person: ask again).
 */
export async function serveGate(
  lease: { request: RelayRequest; closed: boolean } | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (!lease || lease.closed) return sendJson(res, 401, { error: 'Patchbay relay: this run is not open' });
  const gate = lease.request.gate;
  if (!gate || req.method !== 'POST') return sendJson(res, 404, { error: 'Patchbay relay: no gate for this run' });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 200_000) return sendJson(res, 413, { error: 'Patchbay relay: the gate call is too large' });
    chunks.push(chunk as Buffer);
  }
  let call: z.infer<typeof GateCall>;
  try {
    call = GateCall.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch {
    return sendJson(res, 400, { error: 'Patchbay relay: a gate call is {"callId", "command"}' });
  }
  sendJson(res, 200, await gate.judge(call));
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
