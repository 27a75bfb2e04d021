import { isIP } from 'node:net';

/**
 * Whether a model server's base URL points at this machine or a private network: a server people
 * run themselves (Ollama, vLLM, llama.cpp), whose tokens cost nothing per call. Loopback, RFC 1918
 * and unique-local addresses, link-local, `localhost`, `*.local`/`*.internal`/`*.lan`, and one-label
 * names (a container's name on its compose network) count as private.
 */
export function isLocalBaseUrl(baseUrl: string): boolean {
  if (!URL.canParse(baseUrl)) return false;
  const host = new URL(baseUrl).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  if (isIP(host) === 4) return privateV4(host);
  if (isIP(host) === 6) return privateV6(host);
  return host === 'localhost' || /\.(localhost|local|internal|lan)$/.test(host) || !host.includes('.');
}

function privateV4(host: string): boolean {
  const [a = 0, b = 0] = host.split('.').map(Number);
  return (
    a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254)
  );
}

function privateV6(host: string): boolean {
  if (host === '::1') return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host);
  if (mapped?.[1]) return privateV4(mapped[1]);
  return /^f[cd][0-9a-f]{2}:/.test(host) || /^fe[89ab][0-9a-f]:/.test(host);
}
