import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { buildWebBundle, type WebBundle } from '../../web/build.ts';
import type { ApiServer, RouteConfig } from './server.ts';

let bundle: Promise<WebBundle> | undefined;

/** Built once per process (a fraction of a second) and shared by every server in it. */
function webBundle(log: Logger): Promise<WebBundle> {
  bundle ??= buildWebBundle().catch((error: unknown) => {
    bundle = undefined;
    log.error({ err: error }, 'the web page could not be built: check web/src');
    throw error;
  });
  return bundle;
}

/** The page's HTML: a shell that loads the client; it holds no data. */
export function pageHtml(version: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="color-scheme" content="light dark">
<title>Patchbay</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css?v=${version}">
</head>
<body>
<div id="app"><noscript>This page needs JavaScript.</noscript></div>
<script type="module" src="/assets/app.js?v=${version}"></script>
</body>
</html>
`;
}

/** Only this server's own script and stylesheet may run or apply, and the page may only talk to it. */
export const pageCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const securityHeaders = (reply: FastifyReply) =>
  reply
    .header('content-security-policy', pageCsp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin');

/** `/`, `/sessions/:id` and `/insights` (the same shell; the client routes) and the built assets. */
export async function registerWebPage(app: ApiServer, log: Logger): Promise<void> {
  const built = await webBundle(log);
  const html = pageHtml(built.version);
  const open = { config: { public: true } satisfies RouteConfig };
  const page = async (_request: unknown, reply: FastifyReply) =>
    securityHeaders(reply).type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html);
  app.get('/', open, page);
  app.get('/sessions/:id', open, page);
  app.get('/insights', open, page);
  // The query string carries the version, so a new build is a new URL and these may be cached.
  const asset = (type: string, body: string) => async (_request: unknown, reply: FastifyReply) =>
    securityHeaders(reply).type(type).header('cache-control', 'public, max-age=31536000, immutable').send(body);
  app.get('/assets/app.js', open, asset('text/javascript; charset=utf-8', built.js));
  app.get('/assets/app.css', open, asset('text/css; charset=utf-8', built.css));
}
