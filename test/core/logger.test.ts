import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
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
      request: { method: 'POST', url: 'https://github.example/login/oauth/access_token', client_secret: 'cs-123', headers: { authorization: 'Bearer t-1' }, body: 'code=abc&client_secret=cs-123' },
    });
    log.warn({ err, token: 'ghs_top', config: { apiKey: 'sk-1', baseUrl: 'https://api.example' }, req: { headers: { authorization: 'Bearer api-token' } } }, 'failed');
    const text = lines.join('');
    for (const secret of ['cs-123', 't-1', 'ghs_top', 'sk-1', 'api-token']) expect(text).not.toContain(secret);
    const line = JSON.parse(text);
    expect(line.msg).toBe('failed');
    expect(line.config.baseUrl).toBe('https://api.example');
    expect(line.err.message).toBe('bad_verification_code');
    expect(line.err.request.url).toBe('https://github.example/login/oauth/access_token');
  });
});
