import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { configuredSecrets, loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: createLogger('info', stream), lines };
}

describe('the root logger', () => {
  it('redacts secrets by name, at the top and nested in SDK errors, and keeps the rest', () => {
    const { log, lines } = capture();
    const err = Object.assign(new Error('bad_verification_code'), {
      status: 401,
      request: {
        method: 'POST',
        url: 'https://github.example/login/oauth/access_token',
        client_secret: 'cs-123',
        headers: { authorization: 'Bearer t-1' },
        body: 'code=abc&client_secret=cs-123',
      },
    });
    log.warn(
      {
        err,
        token: 'ghs_top',
        config: { apiKey: 'sk-1', baseUrl: 'https://api.example' },
        req: { headers: { authorization: 'Bearer api-token' } },
      },
      'failed',
    );
    const text = lines.join('');
    for (const secret of ['cs-123', 't-1', 'ghs_top', 'sk-1', 'api-token']) expect(text).not.toContain(secret);
    const line = JSON.parse(text);
    expect(line.msg).toBe('failed');
    expect(line.config.baseUrl).toBe('https://api.example');
    expect(line.err.message).toBe('bad_verification_code');
    expect(line.err.status).toBe(401);
    // The error's message, code, status and stack; never the SDK's request object.
    expect(line.err.request).toBeUndefined();
  });

  it('redacts configured secret values, token shapes and URL credentials wherever they appear', () => {
    // Secrets as a user configures them: from the environment, through loadConfig.
    const config = loadConfig({
      SLACK_BOT_TOKEN: 'xoxb-custom-bot-token',
      SLACK_SIGNING_SECRET: 'signing-secret-value-1234',
      GITHUB_APP_ID: '42',
      GITHUB_APP_PRIVATE_KEY: 'not-a-pem-but-a-secret-key-value',
      GITHUB_WEBHOOK_SECRET: 'hook "quoted" secret\\x',
      PATCHBAY_API_TOKEN: 'api-token-0123456789abcdef',
      DATABASE_URL: 'postgres://app:db-pass-w0rd@127.0.0.1:5432/patchbay',
      MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'anthropic-key-without-sk-prefix',
    });
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger('info', stream, configuredSecrets(config)).child({ sessionId: 's1' });
    const leaks = [
      'xoxb-custom-bot-token',
      'signing-secret-value-1234',
      'not-a-pem-but-a-secret-key-value',
      'hook "quoted" secret\\x',
      'api-token-0123456789abcdef',
      'db-pass-w0rd',
      'anthropic-key-without-sk-prefix',
      'xoxb-1234-5678-abcdefgh',
      'xoxp-99-abcdefghij',
      'ghs_16C7e42F292c6912E7710c838347Ae178B4a',
      'gho_abcdefghijklmnop',
      'ghp_abcdefghijklmnop',
      'sk-proj-abcdefghijkl',
      'sk-ant-api03-abcdefgh',
      'hunter2pass',
    ];
    log.info(
      `posting with xoxb-custom-bot-token and signing-secret-value-1234 to https://x-access-token:hunter2pass@github.example/o/r.git`,
    );
    log.warn(
      {
        detail: 'auth failed for xoxb-1234-5678-abcdefgh, xoxp-99-abcdefghij',
        note: ['ghs_16C7e42F292c6912E7710c838347Ae178B4a', 'gho_abcdefghijklmnop ghp_abcdefghijklmnop'],
      },
      'tokens in text',
    );
    log.error({ err: new Error('401 with key sk-proj-abcdefghijkl / sk-ant-api03-abcdefgh') }, 'model failed');
    log.info(
      {
        url: 'postgres://app:db-pass-w0rd@127.0.0.1:5432/patchbay',
        key: 'x',
        text: 'anthropic-key-without-sk-prefix api-token-0123456789abcdef not-a-pem-but-a-secret-key-value',
      },
      'startup',
    );
    log.info({ body: 'hook "quoted" secret\\x' }, 'escaped');
    const text = lines.join('');
    for (const leak of leaks) expect(text, leak).not.toContain(leak);
    // JSON-escaped forms are gone too, and every line is still JSON with the rest intact.
    expect(text).not.toContain('hook \\"quoted\\" secret');
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed[0]!.msg).toBe('posting with [redacted] and [redacted] to https://[redacted]@github.example/o/r.git');
    expect(parsed[3]!.url).toBe('postgres://[redacted]@127.0.0.1:5432/patchbay');
    expect(parsed[3]!.sessionId).toBe('s1');
    // Ordinary words are left alone.
    log.info('sk-learn and ghs_ alone are not tokens; https://example.org/a@b stays');
    expect(JSON.parse(lines.at(-1)!).msg).toBe('sk-learn and ghs_ alone are not tokens; https://example.org/a@b stays');
  });

  it('logs an error as its message, code and stack, never the client it carries (a pg error at Ctrl-C)', () => {
    const { log, lines } = capture();
    const client = {
      connectionParameters: { user: 'patchbay', host: '127.0.0.1' },
      _queryable: false,
      _ending: true,
      processID: 4242,
    };
    const err = Object.assign(
      new Error('Connection terminated unexpectedly', { cause: new Error('read ECONNRESET') }),
      { code: '57P01', client },
    );
    log.warn({ err }, 'query failed');
    const line = JSON.parse(lines.join('')) as { err: Record<string, unknown> };
    expect(Object.keys(line.err).sort()).toEqual(['cause', 'code', 'message', 'stack', 'type']);
    expect(line.err).toMatchObject({
      type: 'Error',
      message: 'Connection terminated unexpectedly',
      code: '57P01',
      cause: { message: 'read ECONNRESET' },
    });
    expect(String(line.err.stack)).toContain('logger.test.ts');
    expect(lines.join('')).not.toContain('connectionParameters');
  });

  it('writes one pretty, colored line per event to a terminal, and JSON anywhere else', () => {
    const lines: string[] = [];
    const terminal = Object.assign(
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
      { isTTY: true },
    );
    const log = createLogger('info', terminal, ['terminal-secret-value']);
    log.info({ sessionId: 's1', note: 'terminal-secret-value' }, 'session started');
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(() => JSON.parse(line)).toThrow();
    expect(line).toContain('session started');
    expect(line).toContain('\u001b[');
    expect(line.trimEnd().split('\n')).toHaveLength(1);
    expect(line).not.toContain('terminal-secret-value');
  });
});
