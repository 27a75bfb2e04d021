import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { PageSessionIssuer } from '../core/page-sign-in.ts';

/** The web page's cookie: a random session id; the server keeps only its digest. */
export const SESSION_COOKIE = 'patchbay_session';

/** How long a page session lasts unless WEB_SESSION_HOURS says otherwise. */
export const DEFAULT_PAGE_SESSION_HOURS = 12;

/**
 * Page sessions kept in the database: revocable (sign-out deletes the row, whichever API process
 * the browser reaches next) and expiring. Made for the API token's sign-in and for other
 * identities (GitHub sign-in) alike.
 */
export type PageSignIns = PageSessionIssuer & {
  /** Who the cookie value signs in, or undefined when it is unknown, expired, revoked or from another API token. */
  verify(cookie: string | undefined): Promise<string | undefined>;
  /** Ends the session the cookie value names, if any (sign-out). */
  revoke(cookie: string | undefined): Promise<void>;
  /** The `Set-Cookie` value that clears the cookie in the browser. */
  clearCookie(): string;
};

export type PageSessionsOptions = {
  db: Kysely<Database>;
  /** The API token: sessions made under another token are refused. */
  token: string;
  secure: boolean;
  ttlMs?: number;
  now?: () => number;
};

/** The page's sessions when an API token guards the page (none without one): secure cookies behind https, `hours` long. */
export function pageSessionsFor(input: {
  db: Kysely<Database>;
  apiToken?: string | undefined;
  publicUrl: string;
  hours: number;
}): PageSignIns | undefined {
  return input.apiToken
    ? createPageSignIns({
        db: input.db,
        token: input.apiToken,
        secure: input.publicUrl.startsWith('https:'),
        ttlMs: input.hours * 60 * 60_000,
      })
    : undefined;
}

export function createPageSignIns(options: PageSessionsOptions): PageSignIns {
  const { db, secure } = options;
  const ttlMs = options.ttlMs ?? DEFAULT_PAGE_SESSION_HOURS * 60 * 60_000;
  const now = options.now ?? Date.now;
  const keyDigest = digest(`patchbay-page-session-key:${options.token}`);
  return {
    async cookieFor(who) {
      const id = randomBytes(32).toString('base64url');
      const at = now();
      // Expired rows go when new ones come, so the table stays the size of the live sessions.
      await db.deleteFrom('page_sessions').where('expires_at', '<', new Date(at)).execute();
      await db
        .insertInto('page_sessions')
        .values({
          id_digest: digest(id),
          who,
          key_digest: keyDigest,
          created_at: new Date(at),
          expires_at: new Date(at + ttlMs),
        })
        .execute();
      // A browser-session cookie: closing the browser ends it there, and the server ends it at expiry.
      return cookieHeader(id, secure);
    },
    async verify(cookie) {
      if (!cookie || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) return undefined;
      const row = await db
        .selectFrom('page_sessions')
        .select(['who', 'key_digest', 'expires_at', 'revoked_at'])
        .where('id_digest', '=', digest(cookie))
        .executeTakeFirst();
      if (!row || row.revoked_at !== null || row.key_digest !== keyDigest || row.expires_at.getTime() <= now())
        return undefined;
      return row.who;
    },
    async revoke(cookie) {
      if (!cookie) return;
      await db
        .updateTable('page_sessions')
        .set({ revoked_at: new Date(now()) })
        .where('id_digest', '=', digest(cookie))
        .execute();
    },
    clearCookie: () => cookieHeader('', secure, 0),
  };
}

/** HttpOnly (no script reads it), SameSite=Strict (other sites' requests do not carry it). */
function cookieHeader(value: string, secure: boolean, maxAge?: number): string {
  const parts = [`${SESSION_COOKIE}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Strict'];
  if (secure) parts.push('Secure');
  if (maxAge !== undefined) parts.push(`Max-Age=${maxAge}`);
  return parts.join('; ');
}

function digest(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}
