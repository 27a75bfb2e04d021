import pino, { type Logger } from 'pino';

/** Paths whose values never reach a log line, wherever they turn up. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-hub-signature-256"]',
  'req.headers["x-slack-signature"]',
  '*.apiKey',
  '*.token',
  '*.accessToken',
  '*.privateKey',
  '*.password',
  '*.secret',
  '*.clientSecret',
  'headers.authorization',
];

/** The one root logger. Library code gets it (or a child) as a parameter. */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino({ level, redact: { paths: redactPaths, censor: '[redacted]' } }, destination as pino.DestinationStream);
}
