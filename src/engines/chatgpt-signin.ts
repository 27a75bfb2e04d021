import type { Logger } from 'pino';
import { PatchbayError } from '../core/errors.ts';
import { type ChatGPTTokens, refreshDue, refreshGrant } from './chatgpt-tokens.ts';

/** Sealing of tokens at rest (PATCHBAY_SECRET_KEY's secret box). */
export type TokenSealer = { seal(plaintext: string): string; open(sealed: string): string };

/** The stored sign-in: its tokens sealed, and why OpenAI refused to refresh it, if it did. */
export type SealedSignIn = {
  accountId: string;
  email: string | null;
  accessCiphertext: string;
  refreshCiphertext: string;
  idCiphertext: string;
  expiresAt: Date | null;
  refusedReason: string | null;
  updatedAt: Date;
};
export type SignInSave = Omit<SealedSignIn, 'updatedAt'>;

/** Where the installation's one sign-in is kept (the database). */
export interface ChatGPTSignInStore {
  read(): Promise<SealedSignIn | undefined>;
  /** Runs `work` holding the sign-in's row, so processes sharing the database refresh one at a time. */
  withLocked<T>(work: (row: SealedSignIn | undefined) => Promise<{ save?: SignInSave; result: T }>): Promise<T>;
  put(save: SignInSave): Promise<void>;
  /** Whether there was one to delete. */
  remove(): Promise<boolean>;
}

/** What the relay asks of a sign-in: the headers of the next call, and fresh ones when the backend refused. */
export type UpstreamSignIn = {
  /** Throws an `unauthorized` PatchbayError saying why no call can be made (none, or refused), with what to do. */
  headers(signal: AbortSignal): Promise<Record<string, string>>;
  refused(sent: Record<string, string>, signal: AbortSignal): Promise<Record<string, string>>;
};

const SIGN_IN_AGAIN = 'sign in again with `patchbay engines codex-login` (or codex-import; docs/engines.md)';

/** Seals a sign-in's tokens for the store. */
export function sealSignIn(box: TokenSealer, tokens: ChatGPTTokens): SignInSave {
  return {
    accountId: tokens.accountId,
    email: tokens.email,
    accessCiphertext: box.seal(tokens.accessToken),
    refreshCiphertext: box.seal(tokens.refreshToken),
    idCiphertext: box.seal(tokens.idToken),
    expiresAt: tokens.expiresAt,
    refusedReason: null,
  };
}

function openSignIn(box: TokenSealer, row: SealedSignIn): ChatGPTTokens {
  return {
    accountId: row.accountId,
    email: row.email,
    accessToken: box.open(row.accessCiphertext),
    refreshToken: box.open(row.refreshCiphertext),
    idToken: box.open(row.idCiphertext),
    expiresAt: row.expiresAt,
  };
}

/** The headers Codex sends the ChatGPT backend with a sign-in (codex-rs: bearer auth and chatgpt-account-id). */
function headersOf(tokens: ChatGPTTokens): Record<string, string> {
  return { authorization: `Bearer ${tokens.accessToken}`, 'chatgpt-account-id': tokens.accountId };
}

function unusable(row: SealedSignIn | undefined): PatchbayError | undefined {
  if (!row) return new PatchbayError('unauthorized', `Codex has no ChatGPT sign-in on this Patchbay: ${SIGN_IN_AGAIN}`);
  if (row.refusedReason)
    return new PatchbayError(
      'unauthorized',
      `the ChatGPT sign-in for Codex no longer works (OpenAI refused to refresh it: ${row.refusedReason}): ${SIGN_IN_AGAIN}`,
    );
  return undefined;
}

type SignInContext = {
  store: ChatGPTSignInStore;
  box: TokenSealer;
  endpoint: { tokenUrl: string; fetch?: typeof fetch };
  log: Logger;
  now: () => number;
};

/**
 * The installation's ChatGPT sign-in as the relay uses it. An access token due to expire is
 * refreshed before it is sent, and one the backend refused is refreshed at once. One refresh is in
 * flight at a time, in this process (callers join it) and across processes (the row is locked
 * while OpenAI is asked; whoever comes next finds the new token). A refresh OpenAI refuses for
 * good marks the sign-in unusable with the reason: every run after fails saying to sign in again.
 * A passing failure keeps the current token (it may still have minutes to live).
 */
export function createChatGPTSignIn(deps: Omit<SignInContext, 'now'> & { now?: () => number }): UpstreamSignIn {
  const context: SignInContext = { ...deps, now: deps.now ?? Date.now };
  let inflight: Promise<ChatGPTTokens> | undefined;
  const refresh = (refusedToken: string | undefined): Promise<ChatGPTTokens> => {
    inflight ??= refreshHoldingRow(context, refusedToken).finally(() => {
      inflight = undefined;
    });
    return inflight;
  };
  return {
    async headers(signal) {
      const row = await context.store.read();
      const problem = unusable(row);
      if (problem || !row) throw problem;
      const tokens = openSignIn(context.box, row);
      if (!refreshDue(tokens.accessToken, context.now())) return headersOf(tokens);
      signal.throwIfAborted();
      return headersOf(await refresh(undefined));
    },
    async refused(sent, signal) {
      signal.throwIfAborted();
      const token = /^Bearer (.+)$/.exec(sent.authorization ?? '')?.[1];
      return headersOf(await refresh(token));
    },
  };
}

async function refreshHoldingRow(context: SignInContext, refusedToken: string | undefined): Promise<ChatGPTTokens> {
  const result = await context.store.withLocked((row) => refreshLocked(context, row, refusedToken));
  if (result instanceof Error) throw result;
  return result;
}

/** The refresh under the row's lock: the tokens to store and use, or the error that says why there are none. */
async function refreshLocked(
  context: SignInContext,
  row: SealedSignIn | undefined,
  refusedToken: string | undefined,
): Promise<{ save?: SignInSave; result: ChatGPTTokens | PatchbayError }> {
  const { box, log } = context;
  const problem = unusable(row);
  if (problem || !row) return { result: problem ?? new PatchbayError('unauthorized', SIGN_IN_AGAIN) };
  const tokens = openSignIn(box, row);
  // Someone (another flight, another process) refreshed it since the caller looked: take theirs.
  const stale =
    refusedToken !== undefined ? tokens.accessToken === refusedToken : refreshDue(tokens.accessToken, context.now());
  if (!stale) return { result: tokens };
  const answer = await refreshGrant(context.endpoint, tokens);
  if ('tokens' in answer) {
    log.info({ expiresAt: answer.tokens.expiresAt?.toISOString() }, 'refreshed the ChatGPT sign-in for Codex');
    return { save: sealSignIn(box, answer.tokens), result: answer.tokens };
  }
  if (answer.permanent) {
    log.warn(
      { reason: answer.failed },
      'OpenAI refused to refresh the ChatGPT sign-in for Codex; it needs a new sign-in',
    );
    const save = { ...row, refusedReason: answer.failed };
    return { save, result: unusable(save)! };
  }
  log.warn({ reason: answer.failed }, 'could not refresh the ChatGPT sign-in for Codex; using the current token');
  if (refusedToken === undefined) return { result: tokens };
  const message = `the ChatGPT sign-in for Codex could not be refreshed just now (${answer.failed})`;
  return { result: new PatchbayError('service_unavailable', message, { retryable: true }) };
}
