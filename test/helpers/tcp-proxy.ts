import { connect, createServer, type Socket } from 'node:net';

export type TcpProxy = {
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  /** Connections accepted while open. */
  readonly accepted: number;
  /** Connections refused while cut (each a client's attempt to connect). */
  readonly refused: number;
  /** Drops every open connection and refuses new ones, as a database host that went away. */
  cut(): void;
  /** Takes connections again. */
  restore(): void;
  close(): Promise<void>;
};

/**
 * A loopback TCP proxy in front of a server (PostgreSQL here), to take the server away from a
 * client without stopping it for anyone else: `cut()` resets every connection through the proxy
 * and closes each new one at once; `restore()` forwards again.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let isCut = false;
  let accepted = 0;
  let refused = 0;
  const server = createServer((client) => {
    if (isCut) {
      refused += 1;
      client.resetAndDestroy();
      return;
    }
    accepted += 1;
    const upstream = connect(target.port, target.host);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      open.add(from);
      from.on('error', () => to.destroy());
      from.on('close', () => {
        open.delete(from);
        to.destroy();
      });
      from.pipe(to);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    via(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    get accepted() {
      return accepted;
    },
    get refused() {
      return refused;
    },
    cut() {
      isCut = true;
      for (const socket of open) socket.resetAndDestroy();
    },
    restore() {
      isCut = false;
    },
    async close() {
      isCut = true;
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
