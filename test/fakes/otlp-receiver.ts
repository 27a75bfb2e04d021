import { createServer, type IncomingMessage } from 'node:http';
import { listenOnLoopback } from './loopback.ts';

export type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
};
export type OtlpBody = {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[];
  }[];
};

/** An OpenTelemetry collector on loopback: OTLP over HTTP with JSON bodies, as the exporter sends them. */
export async function startOtlpReceiver() {
  const bodies: OtlpBody[] = [];
  const refused: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += String(chunk)));
    req.on('end', () => {
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        !String(req.headers['content-type']).startsWith('application/json')
      ) {
        refused.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        return res.writeHead(404).end();
      }
      bodies.push(JSON.parse(text) as OtlpBody);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const { port, close } = await listenOnLoopback(server);
  // Patchbay's own spans (libraries such as pg-boss add theirs to the same provider).
  const spans = () =>
    bodies.flatMap((b) =>
      b.resourceSpans.flatMap((r) => r.scopeSpans.filter((s) => s.scope.name === 'patchbay').flatMap((s) => s.spans)),
    );
  return { url: `http://127.0.0.1:${port}`, bodies, spans, refused, close };
}
