import { isIPv4 } from 'node:net';

/**
 * Whether a request's `Host` names this machine's loopback (or one of `allowed`, such as the host
 * of PUBLIC_URL). Without an API token the API trusts whoever reaches loopback; a web page on
 * another site can reach it too, by pointing its own name at 127.0.0.1 (DNS rebinding), but its
 * requests then carry that site's name as `Host`, which this refuses.
 */
export function isLoopbackHost(host: string | undefined, allowed: readonly string[] = []): boolean {
  const name = hostName(host);
  if (name === undefined) return false;
  if (name === 'localhost' || name.endsWith('.localhost') || name === '::1') return true;
  if (isIPv4(name) && name.startsWith('127.')) return true;
  return allowed.some((a) => hostName(a) === name);
}

/** The name in a Host header, without port, brackets, trailing dot or case. */
function hostName(host: string | undefined): string | undefined {
  const value = host?.trim().toLowerCase();
  if (!value) return undefined;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end > 0 ? value.slice(1, end) : undefined;
  }
  const name = value.split(':')[0]!.replace(/\.$/, '');
  return name || undefined;
}
