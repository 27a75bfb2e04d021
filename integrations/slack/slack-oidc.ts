import { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { IdentityProof } from '../../src/core/identity-proof.ts';
import { slackLogger } from './slack-logger.ts';

/** What Patchbay reads of `openid.connect.userInfo` (Sign in with Slack's OpenID claims). */
const UserInfo = z
  .object({
    ok: z.literal(true),
    sub: z.string().min(1),
    'https://slack.com/user_id': z.string().min(1).optional(),
    'https://slack.com/team_id': z.string().optional(),
  })
  .passthrough();

/**
 * Sign in with Slack (OpenID Connect) as an identity proof: the browser goes to Slack's
 * `/openid/connect/authorize` (scope `openid`), Slack sends it back with a code, and the code is
 * exchanged with `openid.connect.token` (the app's client id and secret) for a token whose
 * `openid.connect.userInfo` says which Slack user signed in. Slack's authorize page lives on the
 * Web API's host (`https://slack.com/openid/connect/authorize` beside `https://slack.com/api/`).
 */
export function createSlackIdentityProof(options: {
  clientId: string;
  clientSecret: string;
  apiUrl: string;
  log: Logger;
}): IdentityProof {
  // The SDK's debug lines carry each request's body: here the client secret and the code. Only
  // its warnings and errors (which name Slack's error code) reach the log.
  const sdk = slackLogger(options.log);
  const logger = { ...sdk, debug: () => undefined, info: () => undefined };
  const authorizeBase = new URL('/openid/connect/authorize', options.apiUrl);
  return {
    source: 'slack',
    name: 'Slack',
    authorizeUrl({ state, redirectUri, nonce }) {
      const url = new URL(authorizeBase);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('scope', 'openid');
      url.searchParams.set('client_id', options.clientId);
      url.searchParams.set('state', state);
      url.searchParams.set('nonce', nonce);
      url.searchParams.set('redirect_uri', redirectUri);
      return url.toString();
    },
    async provenActor({ code, redirectUri, signal }) {
      const anonymous = new WebClient(undefined, {
        slackApiUrl: options.apiUrl,
        logger,
        retryConfig: { retries: 0 },
        timeout: 15_000,
      });
      signal.throwIfAborted();
      const token = await anonymous.openid.connect.token({
        client_id: options.clientId,
        client_secret: options.clientSecret,
        code,
        redirect_uri: redirectUri,
        grant_type: 'authorization_code',
      });
      if (!token.access_token) throw new Error('openid.connect.token answered without an access token');
      signal.throwIfAborted();
      const person = new WebClient(token.access_token, {
        slackApiUrl: options.apiUrl,
        logger,
        retryConfig: { retries: 0 },
        timeout: 15_000,
      });
      const info = UserInfo.parse(await person.openid.connect.userInfo());
      return `slack:${info['https://slack.com/user_id'] ?? info.sub}`;
    },
  };
}
