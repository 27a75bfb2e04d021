import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { refreshDue } from '../../src/engines/chatgpt-tokens.ts';

const SECRET = 'an-encryption-key-of-at-least-32-chars!!';

/** An unsigned JWT with these claims. */
function jwt(claims: object): string {
  return `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;
}

describe('CODEX_AUTH', () => {
  it('chatgpt: the relay forwards OpenAI traffic to the ChatGPT backend (no /v1) and refreshes at auth.openai.com', () => {
    const config = loadConfig({ CODEX_AUTH: 'chatgpt', PATCHBAY_SECRET_KEY: SECRET, OPENAI_API_KEY: 'sk-test' });
    expect(config.engines.openai).toEqual({
      baseUrl: 'https://chatgpt.com/backend-api/codex',
      model: 'gpt-5.5',
      headers: {},
      unversioned: true,
    });
    expect(config.engines.chatgpt).toEqual({
      authUrl: 'https://auth.openai.com',
      tokenUrl: 'https://auth.openai.com/oauth/token',
      secretKey: SECRET,
    });
  });

  it('chatgpt without PATCHBAY_SECRET_KEY is refused at start, saying why', () => {
    expect(() => loadConfig({ CODEX_AUTH: 'chatgpt' })).toThrow(/CODEX_AUTH=chatgpt .*PATCHBAY_SECRET_KEY/);
  });

  it('the default is the API key, sent by the relay as a bearer token', () => {
    const config = loadConfig({ OPENAI_API_KEY: 'sk-test' });
    expect(config.engines.chatgpt).toBeUndefined();
    expect(config.engines.openai).toMatchObject({
      baseUrl: 'https://api.openai.com',
      headers: { authorization: 'Bearer sk-test' },
    });
  });
});

describe('when an access token is refreshed', () => {
  const now = 1_800_000_000_000;
  const at = (iat: number, exp: number) => jwt({ iat: iat / 1000, exp: exp / 1000 });
  it.each([
    ['an hour left of ten days', at(now - 10 * 86_400_000, now + 3_600_000), false],
    ['four minutes left of ten days', at(now - 10 * 86_400_000, now + 240_000), true],
    ['expired', at(now - 3_600_000, now - 1_000), true],
    ['in the last quarter of a 12-second life', at(now - 10_000, now + 2_000), true],
    ['early in a 12-second life', at(now - 1_000, now + 11_000), false],
    ['no exp', jwt({ iat: now / 1000 }), false],
    ['not a JWT', 'opaque-token', false],
  ])('%s', (_, token, due) => {
    expect(refreshDue(token, now)).toBe(due);
  });
});
