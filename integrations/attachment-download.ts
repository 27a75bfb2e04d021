import { type IncomingFile, sizeText } from '../src/core/attachment.ts';

/**
 * Whether a URL is on one of a service's own hosts: the exact host names given (no subdomains, no
 * other ports), over https, or over http only for loopback hosts (the fakes in tests). A picture
 * linked from anywhere else is never fetched.
 */
export function isAllowedHost(url: string, allowedHosts: readonly string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.username || parsed.password) return false;
  const loopback = parsed.hostname === '127.0.0.1' || parsed.hostname === 'localhost' || parsed.hostname === '[::1]';
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && loopback)) return false;
  return allowedHosts.includes(parsed.host);
}

/** A file found on a message, before it is fetched. */
export type FileLink = { sourceKey: string; name: string; url: string };

export type DownloadOptions = {
  /** The hosts (`host[:port]`) the service serves its files from. */
  allowedHosts: readonly string[];
  /** Sent only to the allowed hosts (the bot or installation token). */
  authorization?: string | undefined;
  maxBytes: number;
  signal: AbortSignal;
  timeoutMs?: number;
};

/** What a download came to: the file, or why it was not fetched (for the note the thread gets). */
export type Downloaded = { kind: 'file'; file: IncomingFile } | { kind: 'refused'; name: string; reason: string };

const maxRedirects = 3;

/**
 * Fetches a file from its service's own host, following redirects only within the allowed hosts,
 * under a timeout, and stopping once more than `maxBytes` arrived. Refusals and failures come back
 * as data; it does not throw.
 */
export async function downloadFile(link: FileLink, options: DownloadOptions): Promise<Downloaded> {
  const refuse = (reason: string): Downloaded => ({ kind: 'refused', name: link.name, reason });
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs ?? 30_000)]);
  let url = link.url;
  try {
    for (let hop = 0; hop <= maxRedirects; hop++) {
      if (!isAllowedHost(url, options.allowedHosts)) return refuse(`it is not on ${options.allowedHosts.join(' or ')}`);
      const response = await fetch(url, {
        redirect: 'manual',
        signal,
        headers: options.authorization ? { authorization: options.authorization } : {},
      });
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        await response.body?.cancel();
        url = new URL(location, url).toString();
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel();
        return refuse(`its host answered ${response.status}`);
      }
      const bytes = await readCapped(response, options.maxBytes);
      if (!bytes) return refuse(`it is larger than the ${sizeText(options.maxBytes)} limit`);
      return { kind: 'file', file: { sourceKey: link.sourceKey, name: link.name, bytes } };
    }
    return refuse('its host redirected too often');
  } catch (error) {
    if (options.signal.aborted) throw error;
    return refuse(`it could not be downloaded (${error instanceof Error ? error.message : String(error)})`);
  }
}

/** The body's bytes, or undefined once more than `maxBytes` arrived (the rest is not read). */
async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array | undefined> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    return undefined;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  if (!reader) return new Uint8Array();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
