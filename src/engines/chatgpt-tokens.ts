import { z } from 'zod';
import { PatchbayError } from '../core/errors.ts';

/*
 * The wire of a ChatGPT sign-in for Codex, as openai/codex reads and writes it (codex-rs/core/src/auth.rs
 * and codex-rs/login/src/token_data.rs, read at commits 01513888effa8df4265602bf5e39ac96e39e81db and
 * 1245f8b0dcedd3f9221ca85b49192564b0f1b8ff; the client id, token URL and backend URL are also in the
 * strings of the pinned @openai/codex 0.171.0 binary):
 * - auth.json: `{ OPENAI_API_KEY, tokens: { id_token, access_token, refresh_token, account_id }, last_refresh }`;
 * - the ChatGPT account id is the id token's `https://api.openai.com/auth`.chatgpt_account_id claim;
 * - a refresh is `POST https://auth.openai.com/oauth/token` with a JSON body `{ client_id, grant_type:
 *   "refresh_token", refresh_token, scope: "openid profile email" }`, answered `{ id_token?, access_token?,
 *   refresh_token? }`; a 401 is permanent (`refresh_token_expired`, `_reused`, `_invalidated`), any
 *   other failure passes.
 */

/** Codex's OAuth client id at auth.openai.com (CLIENT_ID in codex-rs). */
export const CODEX_CLIENT_ID = 'app_EMoamEEZ73f0CkXaXp7hrann';

/** The tokens of one sign-in, in the clear (only ever in memory). */
export type ChatGPTTokens = {
  idToken: string;
  accessToken: string;
  refreshToken: string;
  accountId: string;
  email: string | null;
  /** The access token's `exp`. */
  expiresAt: Date | null;
};

const AuthJson = z.object({
  tokens: z.object({
    id_token: z.string().min(1),
    access_token: z.string().min(1),
    refresh_token: z.string().min(1),
    account_id: z.string().min(1).nullish(),
  }),
});

const AuthClaims = z.object({
  exp: z.number().optional(),
  iat: z.number().optional(),
  email: z.string().optional(),
  'https://api.openai.com/auth': z.object({ chatgpt_account_id: z.string().optional() }).partial().optional(),
});
type Claims = z.infer<typeof AuthClaims>;

/** The claims of a JWT's payload (unverified: Patchbay only reads its own tokens' expiry and account). Pure. */
export function jwtClaims(jwt: string): Claims | undefined {
  const payload = jwt.split('.')[1];
  if (!payload) return undefined;
  try {
    const parsed = AuthClaims.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function expiryOf(jwt: string): Date | null {
  const exp = jwtClaims(jwt)?.exp;
  return exp === undefined ? null : new Date(exp * 1000);
}

/**
 * The sign-in in the text of a Codex auth.json (`codex login` on a workstation). Throws an
 * `invalid_input` error naming what is missing; the error never quotes the file. Pure.
 */
export function parseCodexAuthJson(text: string): ChatGPTTokens {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PatchbayError('invalid_input', 'that file is not JSON (expected the auth.json `codex login` writes)');
  }
  const parsed = AuthJson.safeParse(json);
  if (!parsed.success)
    throw new PatchbayError(
      'invalid_input',
      'that auth.json holds no ChatGPT sign-in (tokens.id_token, access_token and refresh_token): sign in with `codex login`, not an API key',
    );
  const t = parsed.data.tokens;
  const claims = jwtClaims(t.id_token);
  const accountId = t.account_id ?? claims?.['https://api.openai.com/auth']?.chatgpt_account_id;
  if (!accountId)
    throw new PatchbayError('invalid_input', 'that auth.json names no ChatGPT account (tokens.account_id)');
  return {
    idToken: t.id_token,
    accessToken: t.access_token,
    refreshToken: t.refresh_token,
    accountId,
    email: claims?.email ?? null,
    expiresAt: expiryOf(t.access_token),
  };
}

/** Due for a refresh: in the last quarter of the access token's life, at most five minutes before it ends. Pure. */
export function refreshDue(accessToken: string, now: number): boolean {
  const claims = jwtClaims(accessToken);
  if (claims?.exp === undefined) return false;
  const expires = claims.exp * 1000;
  const life = claims.iat !== undefined ? expires - claims.iat * 1000 : 20 * 60_000;
  return now >= expires - Math.min(5 * 60_000, life / 4);
}

const RefreshAnswer = z.object({
  id_token: z.string().min(1).nullish(),
  access_token: z.string().min(1).nullish(),
  refresh_token: z.string().min(1).nullish(),
});

export type GrantResult = { tokens: ChatGPTTokens } | { failed: string; permanent: boolean };

/** What Codex tells its user for each permanent refusal (codex-rs auth.rs REFRESH_TOKEN_*_MESSAGE). */
const REFUSALS: Record<string, string> = {
  refresh_token_expired: 'its refresh token has expired',
  refresh_token_reused: 'its refresh token was already used',
  refresh_token_invalidated: 'its refresh token was revoked',
};

/** The refusal code of a token endpoint's error body: `error` (a string or `{code}`) or `code`. Pure. */
function refusalCode(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const { error, code } = body as { error?: unknown; code?: unknown };
  if (typeof error === 'string') return error;
  if (error && typeof error === 'object' && typeof (error as { code?: unknown }).code === 'string')
    return (error as { code: string }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The refresh grant at the token endpoint. 401 (and OAuth's 400 invalid_grant) refuse the refresh
 * token for good; anything else (5xx, 429, no answer) passes. The caller's signal does not cut it
 * short: a refresh token sent may be spent, so its answer is awaited (within a minute) and kept.
 */
export async function refreshGrant(
  endpoint: { tokenUrl: string; fetch?: typeof fetch },
  current: ChatGPTTokens,
): Promise<GrantResult> {
  let response: Response;
  try {
    response = await (endpoint.fetch ?? fetch)(endpoint.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_id: CODEX_CLIENT_ID,
        grant_type: 'refresh_token',
        refresh_token: current.refreshToken,
        scope: 'openid profile email',
      }),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    return { failed: `the token endpoint could not be reached (${(error as Error).message})`, permanent: false };
  }
  const body: unknown = await response.json().catch(() => undefined);
  const answer = response.ok ? RefreshAnswer.safeParse(body) : undefined;
  if (answer?.success && answer.data.access_token) {
    const idToken = answer.data.id_token ?? current.idToken;
    return {
      tokens: {
        ...current,
        idToken,
        accessToken: answer.data.access_token,
        refreshToken: answer.data.refresh_token ?? current.refreshToken,
        email: jwtClaims(idToken)?.email ?? current.email,
        expiresAt: expiryOf(answer.data.access_token),
      },
    };
  }
  const code = refusalCode(body);
  const permanent = response.status === 401 || (response.status === 400 && code === 'invalid_grant');
  const reason = code ? (REFUSALS[code] ?? `OpenAI answered ${code}`) : `OpenAI answered HTTP ${response.status}`;
  return { failed: reason, permanent };
}
