import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A loopback Socket Mode server (wire-formats §1.7): says hello on connect, sends envelopes, and
 * resolves each send with the client's ack, which must echo the envelope_id.
 */
export type FakeSlackSocket = {
  url: string;
  /** Resolves once a client is connected. */
  connected(): Promise<void>;
  /** Sends an events_api envelope and resolves with the ack the client sent back. */
  sendEvent(
    payload: Record<string, unknown>,
    retry?: { attempt: number; reason: string },
  ): Promise<{ envelope_id: string; payload?: unknown }>;
  sendInteractive(payload: Record<string, unknown>): Promise<{ envelope_id: string; payload?: unknown }>;
  close(): Promise<void>;
};

export async function startFakeSlackSocket(): Promise<FakeSlackSocket> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  let client: WebSocket | undefined;
  const waiting = new Map<string, (ack: { envelope_id: string; payload?: unknown }) => void>();
  let onConnect: (() => void) | undefined;

  server.on('connection', (socket, request) => {
    if (!/[?&]ticket=/.test(request.url ?? '')) return socket.close(1008, 'missing ticket');
    client = socket;
    socket.send(
      JSON.stringify({
        type: 'hello',
        num_connections: 1,
        debug_info: { host: 'fake' },
        connection_info: { app_id: 'A123ABC456' },
      }),
    );
    socket.on('message', (data) => {
      const ack = JSON.parse(String(data)) as { envelope_id?: string; payload?: unknown };
      if (ack.envelope_id) waiting.get(ack.envelope_id)?.({ envelope_id: ack.envelope_id, payload: ack.payload });
    });
    onConnect?.();
  });

  function send(envelope: Record<string, unknown>) {
    if (!client) throw new Error('no Socket Mode client is connected');
    const id = randomUUID();
    const acked = new Promise<{ envelope_id: string; payload?: unknown }>((resolve) => waiting.set(id, resolve));
    client.send(JSON.stringify({ envelope_id: id, ...envelope }));
    return acked;
  }

  return {
    url: `ws://127.0.0.1:${port}/link/?ticket=${randomUUID()}`,
    connected: () => (client ? Promise.resolve() : new Promise<void>((resolve) => (onConnect = resolve))),
    sendEvent: (payload, retry) =>
      send({
        payload,
        type: 'events_api',
        accepts_response_payload: false,
        retry_attempt: retry?.attempt ?? 0,
        retry_reason: retry?.reason ?? '',
      }),
    sendInteractive: (payload) => send({ payload, type: 'interactive', accepts_response_payload: false }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of server.clients) socket.terminate();
        server.close(() => resolve());
      }),
  };
}
