import { spawnSync } from 'node:child_process';
import { PatchbayError } from '../src/core/errors.ts';

/**
 * Inside a 'proxy' sandbox: its own network namespace (loopback only), the host proxy's unix socket
 * bound in, and socat relaying the sandbox's 127.0.0.1:3128 to that socket. Nothing else leads out.
 */
export const RELAY_HOST = '127.0.0.1';
export const RELAY_PORT = 3128;
export const SANDBOX_PROXY_SOCKET = '/run/patchbay/egress.sock';
export const PROXY_URL = `http://${RELAY_HOST}:${RELAY_PORT}`;

/** The variables that point HTTP clients at the relay (NO_PROXY empty: loopback goes through it too). */
export function proxyEnv(secretNames: readonly string[] = []): Record<string, string> {
  const env: Record<string, string> = {
    HTTP_PROXY: PROXY_URL,
    HTTPS_PROXY: PROXY_URL,
    http_proxy: PROXY_URL,
    https_proxy: PROXY_URL,
    NO_PROXY: '',
    no_proxy: '',
    // Node's own fetch follows the variables above only when asked to.
    NODE_USE_ENV_PROXY: '1',
  };
  for (const name of secretNames) env[secretUrlVariable(name)] = `${PROXY_URL}/secrets/${name}/`;
  return env;
}

/** PATCHBAY_SECRET_<NAME>_URL: the plain proxy URL a SANDBOX_SECRETS entry is reached at. */
export function secretUrlVariable(name: string): string {
  return `PATCHBAY_SECRET_${name.toUpperCase().replace(/-/g, '_')}_URL`;
}

/**
 * Prefixes a command so the relay is listening before it starts. The relay is started from a
 * subshell and so belongs to the sandbox's init, not to the command's shell (a `wait` in the
 * command does not wait for it); it dies with the sandbox's pid namespace when the command ends.
 * The prefix shares the command's first line, so line numbers in its error messages stay the same,
 * and the command is not copied into any argv (however the caller hands the script to the sandbox).
 */
export function withEgressRelay(command: string): string {
  const listening = ` ${hexIpv4(RELAY_HOST)}:${RELAY_PORT.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A`;
  // The wait reads /proc/net/tcp with shell builtins only: no process per try, so it ends as soon
  // as socat listens, bounded in case socat cannot start.
  const prelude = [
    `(socat -lf /dev/null -b 65536 TCP4-LISTEN:${RELAY_PORT},bind=${RELAY_HOST},reuseaddr,fork UNIX-CONNECT:${SANDBOX_PROXY_SOCKET} </dev/null >/dev/null 2>&1 &)`,
    `_pb_try=0; _pb_up=''`,
    `while [ -z "$_pb_up" ] && [ "$_pb_try" -lt 20000 ]; do _pb_try=$((_pb_try+1)); while IFS= read -r _pb_line; do case "$_pb_line" in *'${listening}'*) _pb_up=1; break;; esac; done </proc/net/tcp; done`,
    `unset _pb_try _pb_up _pb_line`,
  ].join('; ');
  return `${prelude}; ${command}`;
}

/** socat must be on this host (its /usr is the sandbox's): fail at startup with what to do. */
export function checkSocat(path: string): void {
  const result = spawnSync('socat', ['-V'], { env: { PATH: path }, encoding: 'utf8' });
  if (result.error || result.status !== 0) {
    throw new PatchbayError(
      'sandbox_unavailable',
      'SANDBOX_NETWORK=proxy needs socat, which relays the egress proxy into the sandbox: install it (apt-get install socat, or ./bootstrap.sh), or set SANDBOX_NETWORK=none',
    );
  }
}

/** 127.0.0.1 as /proc/net/tcp writes it (little-endian hex). */
function hexIpv4(address: string): string {
  return address
    .split('.')
    .map((part) => Number(part).toString(16).toUpperCase().padStart(2, '0'))
    .reverse()
    .join('');
}
