import { createConnection, createServer, type Server } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * A host "on the internet" that the fake's sandboxes can reach: a name and port (what PUBLIC_URL
 * says) standing for a server on this machine's loopback. A sandbox has no network of its own (see
 * README); a command in one whose network policy lets the name out gets, in its network namespace,
 * the name in /etc/hosts at `inside`, a listener there (socat) and, through a unix socket bound in,
 * a path to `target` on the host. Loopback inside a sandbox stays the sandbox's own: a server on the
 * host's 127.0.0.1 is not reachable from it, as on Modal.
 */
export type InternetHost = {
  host: string;
  port: number;
  /** The address the name stands for on the internet, which CIDR allowlists are matched against. */
  address: string;
  /** Where the name points inside the sandbox's own namespace. */
  inside: string;
  /** The unix socket on the host, and where it is bound in the sandbox. */
  hostSocket: string;
  sandboxSocket: string;
};

export type Internet = {
  hosts: InternetHost[];
  /** The /etc/hosts every sandbox command gets (the names resolve whatever the policy; the policy decides what connects). */
  hostsFile: string;
  publish(host: string, port: number, target: { host: string; port: number }, address?: string): Promise<void>;
  close(): Promise<void>;
};

export function createInternet(root: string): Internet {
  const hosts: InternetHost[] = [];
  const servers: Server[] = [];
  const hostsFile = join(root, 'hosts');
  return {
    hosts,
    hostsFile,
    async publish(host, port, target, address = '203.0.113.10') {
      const n = hosts.length;
      const hostSocket = join(root, `internet-${n}.sock`);
      const server = createServer((inbound) => {
        const outbound = createConnection(target.port, target.host);
        inbound.pipe(outbound).pipe(inbound);
        inbound.on('error', () => outbound.destroy());
        outbound.on('error', () => inbound.destroy());
      });
      await new Promise<void>((resolve) => server.listen(hostSocket, resolve));
      servers.push(server);
      hosts.push({
        host,
        port,
        address,
        inside: `127.0.0.${n + 2}`,
        hostSocket,
        sandboxSocket: `/run/fake-modal/internet-${n}.sock`,
      });
      const lines = ['127.0.0.1 localhost', '::1 localhost', ...hosts.map((h) => `${h.inside} ${h.host}`)];
      await writeFile(hostsFile, `${lines.join('\n')}\n`);
    },
    async close() {
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

/**
 * The bwrap arguments and the command wrapper that give one command the bridges it may use: the
 * listeners start before the command and end after it (they are its shell's children).
 */
export function bridgeCommand(
  bridges: readonly InternetHost[],
  hostsFile: string,
  args: readonly string[],
): { bwrapArgs: string[]; args: string[] } {
  const bwrapArgs = ['--ro-bind', hostsFile, '/etc/hosts'];
  if (bridges.length === 0) return { bwrapArgs, args: [...args] };
  // bwrap makes the socket's mount point; /run is the host's otherwise.
  bwrapArgs.push('--tmpfs', '/run/fake-modal');
  const listeners = bridges.map(
    (b) =>
      `socat -lf /dev/null TCP4-LISTEN:${b.port},bind=${b.inside},reuseaddr,fork UNIX-CONNECT:${b.sandboxSocket} </dev/null >/dev/null 2>&1 & _fm_pids="$_fm_pids $!"`,
  );
  // Bounded: a listener that cannot start leaves the command to find the host unreachable.
  const waits = bridges.map(
    (b) =>
      `_fm_try=0; until grep -q ' ${procTcp(b.inside, b.port)} 00000000:0000 0A' /proc/net/tcp || [ $_fm_try -gt 2000 ]; do _fm_try=$((_fm_try+1)); done`,
  );
  const script = [...listeners, ...waits, '"$@"; _fm_rc=$?', 'kill $_fm_pids 2>/dev/null', 'exit $_fm_rc'].join('\n');
  return {
    bwrapArgs: [...bwrapArgs, ...bridges.flatMap((b) => ['--bind', b.hostSocket, b.sandboxSocket])],
    args: ['sh', '-c', script, 'sh', ...args],
  };
}

/** address:port as /proc/net/tcp writes them (little-endian hex address). */
function procTcp(address: string, port: number): string {
  const hex = address
    .split('.')
    .map((part) => Number(part).toString(16).toUpperCase().padStart(2, '0'))
    .reverse()
    .join('');
  return `${hex}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
}
