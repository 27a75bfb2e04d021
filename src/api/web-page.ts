import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { ApiServer, RouteConfig } from './server.ts';
import { pageScript } from './web-page-script.ts';
import { pageStyle } from './web-page-style.ts';

const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The one page: a session list at `/` and a live session at `/sessions/:id`, both rendered client-side. */
export const pageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Patchbay</title>
<link rel="icon" href="data:,">
<style>${pageStyle}</style>
</head>
<body>
<header class="top"><a class="brand" href="/">Patchbay</a><span class="conn" id="conn" aria-live="polite"></span></header>
<main id="app"><noscript>This page needs JavaScript.</noscript></main>
<script>${pageScript}</script>
</body>
</html>
`;

/** Only the page's own inline script and style may run, and it may only talk to this server. */
export const pageCsp = [
  "default-src 'none'",
  `script-src ${hash(pageScript)}`,
  `style-src ${hash(pageStyle)}`,
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function registerWebPage(app: ApiServer): void {
  const send = async (_request: unknown, reply: FastifyReply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', pageCsp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(pageHtml);
  // The page holds no data; it asks for the token and sends it with every API call.
  app.get('/', { config: { public: true } satisfies RouteConfig }, send);
  app.get('/sessions/:id', { config: { public: true } satisfies RouteConfig }, send);
}
