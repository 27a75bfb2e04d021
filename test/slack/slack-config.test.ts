import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { verifySlackSignature } from '../../integrations/slack/slack-signature.ts';

describe('Slack configuration', () => {
  it('is off without SLACK_BOT_TOKEN, and reads HTTP or Socket Mode settings with it', () => {
    expect(loadConfig({}).slack).toBeUndefined();
    expect(loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' }).slack).toEqual({
      botToken: 'xoxb-1',
      signingSecret: 's',
      apiUrl: 'https://slack.com/api/',
    });
    expect(
      loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xapp-1', SLACK_API_URL: 'http://127.0.0.1:9/api' })
        .slack,
    ).toEqual({
      botToken: 'xoxb-1',
      appToken: 'xapp-1',
      apiUrl: 'http://127.0.0.1:9/api/',
    });
  });

  it('names the variable when a setting is wrong or missing', () => {
    expect(() => loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1' })).toThrow(/SLACK_SIGNING_SECRET .* SLACK_APP_TOKEN/);
    expect(() => loadConfig({ SLACK_BOT_TOKEN: 'xoxp-user', SLACK_SIGNING_SECRET: 's' })).toThrow(
      /SLACK_BOT_TOKEN: must be a bot token/,
    );
    expect(() => loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xoxb-2' })).toThrow(
      /SLACK_APP_TOKEN: must be an app-level token/,
    );
  });
});

describe('verifySlackSignature', () => {
  // Slack's published test vector ("Verifying requests from Slack").
  const vector = {
    signingSecret: '8f742231b10e8888abcd99yyyzzz85a5',
    timestamp: '1531420618',
    rawBody:
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    signature: 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
  };
  it.each([
    ['the published vector', {}, { ok: true }],
    ['5 minutes later', { nowSeconds: 1531420618 + 300 }, { ok: true }],
    ['5 minutes and 1 s later', { nowSeconds: 1531420618 + 301 }, { ok: false, reason: 'stale' }],
    ['5 minutes and 1 s earlier', { nowSeconds: 1531420618 - 301 }, { ok: false, reason: 'stale' }],
    ['a changed body', { rawBody: `${vector.rawBody}&x=1` }, { ok: false, reason: 'mismatch' }],
    ['a v1 signature', { signature: vector.signature.replace('v0=', 'v1=') }, { ok: false, reason: 'mismatch' }],
    ['a short signature', { signature: 'v0=abc' }, { ok: false, reason: 'mismatch' }],
    ['no timestamp', { timestamp: undefined }, { ok: false, reason: 'missing' }],
    ['a non-numeric timestamp', { timestamp: '1531420618.5' }, { ok: false, reason: 'missing' }],
  ] as const)('%s', (_name, change, expected) => {
    expect(verifySlackSignature({ ...vector, nowSeconds: 1531420618 + 10, ...change })).toEqual(expected);
  });
});
