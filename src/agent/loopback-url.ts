import { PatchbayError } from '../core/errors.ts';

/** The hosts a URL may name to reach a server inside the sandbox: its own loopback, nothing else. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * `raw` as an http(s) URL on the sandbox's loopback (127.0.0.1, localhost, [::1]): a server the
 * agent runs in the sandbox. Anything else is refused ('invalid_input', said for the model), so a
 * tool that opens it never reaches another host.
 */
export function loopbackUrl(raw: string): URL {
  const url = httpUrl(raw);
  if (!LOOPBACK_HOSTS.has(url.hostname))
    throw new PatchbayError(
      'invalid_input',
      `Refused ${url.host}: only a server inside the sandbox can be opened, at 127.0.0.1, localhost or [::1]`,
    );
  return url;
}

/** `raw` as an http(s) URL with no user name or password, or 'invalid_input' saying why not (for the model). */
export function httpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PatchbayError(
      'invalid_input',
      `${JSON.stringify(raw)} is not a URL: give one like http://127.0.0.1:3000/`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new PatchbayError('invalid_input', `Only http and https URLs can be opened, not ${url.protocol}`);
  if (url.username || url.password)
    throw new PatchbayError('invalid_input', 'A URL with a user name or password is refused');
  return url;
}
