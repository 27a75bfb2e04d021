import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts a fake's server on a free loopback port; `close` drops open connections (SSE, keep-alive) too. */
export async function listenOnLoopback(server: Server): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
