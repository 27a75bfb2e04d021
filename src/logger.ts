import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

/** Paths whose values never reach a log line, wherever they turn up. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-hub-signature-256"]',
  'req.headers["x-slack-signature"]',
  'headers.authorization',
  // Secrets by name, at the top of a logged object and one or two levels down (an SDK error's
  // `request` carries the call's credentials and body).
  ...[
    'apiKey',
    'token',
    'accessToken',
    'privateKey',
    'password',
    'secret',
    'clientSecret',
    'client_secret',
    'authorization',
  ].flatMap((key) => [key, `*.${key}`, `*.*.${key}`]),
  '*.headers.authorization',
  '*.*.headers.authorization',
  'err.request.body',
  'err.config.data',
];

const CENSOR = '[redacted]';

/**
 * Token shapes replaced wherever they appear in a line (a message, an error's text, a URL), since
 * redaction by key misses a token pasted into a string: Slack (`xoxb-`, `xoxp-`, … and `xapp-`),
 * GitHub (`ghs_`, `gho_`, `ghp_`, `ghu_`, `ghr_`, `github_pat_`), OpenAI/Anthropic-style `sk-` keys,
 * and PEM private keys.
 */
const TOKEN_PATTERNS = [
  /\bxox[a-z]-[A-Za-z0-9-]{6,}/g,
  /\bxapp-[A-Za-z0-9-]{6,}/g,
  /\bgh[opsur]_[A-Za-z0-9]{8,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
];

/** `scheme://user:password@host`: the credentials go, the rest of the URL stays. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi;

/** Secret values shorter than this are not matched by value (they would match ordinary text). */
const MIN_SECRET_LENGTH = 8;

/**
 * Replaces every known secret value, token-shaped string and URL credential in `text`. Values are
 * matched raw and as they appear inside a JSON string (escaped), since log lines are JSON.
 */
export function createValueRedactor(secrets: readonly string[] = []): (text: string) => string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  // Longest first, so a secret that contains another is replaced whole.
  const escaped = [...forms].sort((a, b) => b.length - a.length).map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const byValue = escaped.length ? new RegExp(escaped.join('|'), 'g') : undefined;
  return (text) => {
    let out = byValue ? text.replace(byValue, CENSOR) : text;
    for (const pattern of TOKEN_PATTERNS) out = out.replace(pattern, CENSOR);
    return out.replace(URL_CREDENTIALS, `$1${CENSOR}@`);
  };
}

/**
 * An error as a log line shows it: its type, message, code (and HTTP status), stack and cause, and
 * nothing else, so an SDK or database error never drags its client, request or socket into the log.
 */
export function serializeError(error: unknown, depth = 0): Record<string, unknown> {
  if (!(error instanceof Error))
    return { message: typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error)) };
  const { code, status } = error as { code?: unknown; status?: unknown };
  return {
    type: error.name,
    message: error.message,
    ...((typeof code === 'string' || typeof code === 'number') && { code }),
    ...(typeof status === 'number' && { status }),
    ...(error.stack && { stack: error.stack }),
    ...(error.cause !== undefined && depth < 3 && { cause: serializeError(error.cause, depth + 1) }),
  };
}

/**
 * The one root logger. Library code gets it (or a child) as a parameter. `secrets` are the
 * configured secret values: they are replaced wherever they appear in a line, as are token-shaped
 * strings and credentials inside URLs. On a terminal, lines are for people (pino-pretty: one
 * colored line per event); anywhere else they are JSON, one object per line.
 */
export function createLogger(
  level: string,
  destination: NodeJS.WritableStream = process.stdout,
  secrets: readonly string[] = [],
): Logger {
  const redactValues = createValueRedactor(secrets);
  const tty = (destination as { isTTY?: boolean }).isTTY === true;
  const stream = tty
    ? pretty({ destination, colorize: true, singleLine: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' })
    : destination;
  return pino(
    {
      level,
      redact: { paths: redactPaths, censor: CENSOR },
      serializers: { err: serializeError, error: serializeError },
      hooks: { streamWrite: redactValues },
    },
    stream as pino.DestinationStream,
  );
}
