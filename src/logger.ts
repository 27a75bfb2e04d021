import pino, { type Logger } from 'pino';

/** Paths whose values never reach a log line, wherever they turn up. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-hub-signature-256"]',
  'req.headers["x-slack-signature"]',
  'headers.authorization',
  // Secrets by name, at the top of a logged object and one or two levels down (an SDK error's
  // `request` carries the call's credentials and body).
  ...['apiKey', 'token', 'accessToken', 'privateKey', 'password', 'secret', 'clientSecret', 'client_secret', 'authorization'].flatMap((key) => [
    key,
    `*.${key}`,
    `*.*.${key}`,
  ]),
  '*.headers.authorization',
  '*.*.headers.authorization',
  'err.request.body',
  'err.config.data',
];

/** The one root logger. Library code gets it (or a child) as a parameter. */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino({ level, redact: { paths: redactPaths, censor: '[redacted]' } }, destination as pino.DestinationStream);
}
