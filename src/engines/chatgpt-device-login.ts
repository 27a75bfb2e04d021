import { z } from 'zod';
import { PatchbayError } from '../core/errors.ts';
import { CODEX_CLIENT_ID, type ChatGPTTokens, jwtClaims } from './chatgpt-tokens.ts';

/*
 * Codex's device-code sign-in (`codex login --device-auth`), as codex-rs/login/src/device_code_auth.rs
 * does it (read at commit 0483fd17ab6791a7c9dbc6a5906b0be26f4a841b); the code exchange is server.rs's
 * exchange_code_for_tokens:
 * 1. POST {issuer}/api/accounts/deviceauth/usercode `{client_id}` → `{device_auth_id, user_code, interval}`;
 * 2. the person opens {issuer}/codex/device and enters the code (within 15 minutes);
 * 3. POST {issuer}/api/accounts/deviceauth/token `{device_auth_id, user_code}` answers 403/404 until
 *    then, and `{authorization_code, code_challenge, code_verifier}` after;
 * 4. POST {issuer}/oauth/token, form-encoded `grant_type=authorization_code, code, redirect_uri=
 *    {issuer}/deviceauth/callback, client_id, code_verifier` → `{id_token, access_token, refresh_token}`.
 */

const UserCode = z.object({
  device_auth_id: z.string().min(1),
  user_code: z.string().min(1).optional(),
  usercode: z.string().min(1).optional(),
  interval: z.coerce.number().int().nonnegative().default(5),
});
const Approved = z.object({ authorization_code: z.string().min(1), code_verifier: z.string().min(1) });
const Exchanged = z.object({
  id_token: z.string().min(1),
  access_token: z.string().min(1),
  refresh_token: z.string().min(1),
});

export type DeviceLoginDeps = {
  /** OPENAI_AUTH_URL. */
  issuer: string;
  /** Told where to go and which code to enter. */
  show(verificationUrl: string, userCode: string): void;
  signal: AbortSignal;
  fetch?: typeof fetch;
  /** Waits between polls (a test shortens it). */
  sleep?: (ms: number) => Promise<void>;
};

const MAX_WAIT_MS = 15 * 60_000;

/** Signs in with ChatGPT by a device code: the tokens once the person has approved, or a clear error. */
export async function deviceLogin(deps: DeviceLoginDeps): Promise<ChatGPTTokens> {
  const issuer = deps.issuer.replace(/\/+$/, '');
  const post = (path: string, body: object) =>
    (deps.fetch ?? fetch)(`${issuer}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: deps.signal,
    });
  const asked = await post('/api/accounts/deviceauth/usercode', { client_id: CODEX_CLIENT_ID });
  if (!asked.ok)
    throw new PatchbayError(
      'unauthorized',
      asked.status === 404
        ? 'device code sign-in is not enabled for this OpenAI server: sign in with `codex login` on a workstation and use codex-import'
        : `OpenAI refused to start a device sign-in (HTTP ${asked.status})`,
    );
  const code = UserCode.parse(await asked.json());
  const userCode = code.user_code ?? code.usercode;
  if (!userCode) throw new PatchbayError('model_bad_response', 'OpenAI answered no device code');
  deps.show(`${issuer}/codex/device`, userCode);
  const approved = await pollApproval(
    deps,
    post,
    { device_auth_id: code.device_auth_id, user_code: userCode },
    code.interval,
  );
  return exchangeCode(deps, issuer, approved);
}

async function pollApproval(
  deps: DeviceLoginDeps,
  post: (path: string, body: object) => Promise<Response>,
  body: { device_auth_id: string; user_code: string },
  intervalSeconds: number,
): Promise<z.infer<typeof Approved>> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms)));
  const started = Date.now();
  for (;;) {
    const answer = await post('/api/accounts/deviceauth/token', body);
    if (answer.ok) return Approved.parse(await answer.json());
    if (answer.status !== 403 && answer.status !== 404)
      throw new PatchbayError('unauthorized', `OpenAI refused the device sign-in (HTTP ${answer.status})`);
    if (Date.now() - started >= MAX_WAIT_MS)
      throw new PatchbayError('timeout', 'the device code was not entered within 15 minutes');
    deps.signal.throwIfAborted();
    await sleep(intervalSeconds * 1000);
  }
}

async function exchangeCode(
  deps: DeviceLoginDeps,
  issuer: string,
  approved: z.infer<typeof Approved>,
): Promise<ChatGPTTokens> {
  const answer = await (deps.fetch ?? fetch)(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: approved.authorization_code,
      redirect_uri: `${issuer}/deviceauth/callback`,
      client_id: CODEX_CLIENT_ID,
      code_verifier: approved.code_verifier,
    }),
    signal: deps.signal,
  });
  if (!answer.ok) throw new PatchbayError('unauthorized', `OpenAI refused the sign-in code (HTTP ${answer.status})`);
  const tokens = Exchanged.parse(await answer.json());
  const claims = jwtClaims(tokens.id_token);
  const accountId = claims?.['https://api.openai.com/auth']?.chatgpt_account_id;
  if (!accountId) throw new PatchbayError('model_bad_response', 'the sign-in names no ChatGPT account');
  const exp = jwtClaims(tokens.access_token)?.exp;
  return {
    idToken: tokens.id_token,
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    accountId,
    email: claims.email ?? null,
    expiresAt: exp === undefined ? null : new Date(exp * 1000),
  };
}
