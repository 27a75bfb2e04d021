import type { ApiServer } from './server.ts';

/**
 * Cross-site request refusal for state-changing API routes (CSRF). Without PATCHBAY_API_TOKEN the
 * API trusts loopback, and with it the page's cookie is an ambient credential; either way a page on
 * another site must not be able to stop a session or start one. Three checks, any one refuses:
 * - `Sec-Fetch-Site` (every current browser sends it) must be `same-origin`;
 * - `Origin`, when sent, must be this server (its Host or PUBLIC_URL);
 * - a request that comes from a browser (it carries Origin or fetch metadata: every current browser
 *   sends one of them on any POST, PUT or DELETE) must carry the page's custom header, which another
 *   origin cannot add without a CORS preflight that this server never grants.
 * API clients that send neither (the CLI, curl, integrations) are not a browser a third-party page
 * can drive, so the custom header is not asked of them; the page's cookie is SameSite=Strict on top.
 */

/** The header the web page adds to every API call. */
export const PAGE_REQUEST_HEADER = 'x-patchbay-request';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export type CrossSiteInput = {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  /** Hosts (name:port as in a Host header) that are this server: the request's Host and PUBLIC_URL's. */
  ownHosts: readonly string[];
};

/** Why this request is refused as cross-site, or undefined when it may go on. Pure. */
export function crossSiteRefusal({ method, headers, ownHosts }: CrossSiteInput): string | undefined {
  if (SAFE_METHODS.has(method.toUpperCase())) return undefined;
  const site = header(headers, 'sec-fetch-site');
  if (site !== undefined && site.toLowerCase() !== 'same-origin')
    return `Sec-Fetch-Site is ${JSON.stringify(site)}: the request came from another site`;
  const origin = header(headers, 'origin');
  if (origin !== undefined && !isOwnOrigin(origin, ownHosts))
    return `Origin ${JSON.stringify(origin)} is not this server`;
  const fromBrowser = site !== undefined || origin !== undefined;
  if (fromBrowser && header(headers, PAGE_REQUEST_HEADER) === undefined)
    return `a browser request without the ${PAGE_REQUEST_HEADER} header the page sends`;
  return undefined;
}

function isOwnOrigin(origin: string, ownHosts: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (sandboxed frames, file:, some redirects) and garbage are nobody's origin.
  }
  // An Origin leaves out the scheme's default port; a Host header may name it.
  const withPort = `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
  return ownHosts.some((own) => [url.host, withPort].includes(own.toLowerCase()));
}

function header(headers: CrossSiteInput['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The hook: every /api route (by its matched pattern, as the token check) answers a cross-site request with 403. */
export function refuseCrossSite(app: ApiServer, publicUrl: string | undefined): void {
  const publicHosts = publicUrl ? [new URL(publicUrl).host] : [];
  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url;
    if (route === undefined || !(route === '/api' || route.startsWith('/api/'))) return;
    const ownHosts = [...(request.headers.host ? [request.headers.host] : []), ...publicHosts];
    const refusal = crossSiteRefusal({ method: request.method, headers: request.headers, ownHosts });
    if (!refusal) return;
    request.log.warn(
      { method: request.method, route, origin: request.headers.origin, site: request.headers['sec-fetch-site'] },
      'API request refused as cross-site',
    );
    return reply.code(403).send({ error: 'cross_site', message: `refused: ${refusal}` });
  });
}
