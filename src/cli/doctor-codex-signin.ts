import pg from 'pg';
import { describeError } from '../core/errors.ts';
import { signInState } from './codex-signin-cli.ts';
import type { DoctorDeps, DoctorRow } from './doctor-checks.ts';

const check = 'codex sign-in';
const IMPORT =
  'run `codex login` on a workstation, then `patchbay engines codex-import <auth.json>` here (docs/engines.md)';

/**
 * With CODEX_AUTH=chatgpt, the stored ChatGPT sign-in's state (who, until when, refused), never a
 * token. It reads DATABASE_URL; the embedded database is the server's alone while it runs, so
 * there `patchbay engines codex-status` (with the server stopped) tells the same.
 */
export async function checkCodexSignIn({ config }: DoctorDeps): Promise<DoctorRow | undefined> {
  if (!config.engines.chatgpt) return undefined;
  if (!config.databaseUrl)
    return { check, ok: true, detail: 'kept in the embedded database: `patchbay engines codex-status` shows it' };
  const client = new pg.Client({ connectionString: config.databaseUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{
      account_id: string;
      email: string | null;
      expires_at: Date | null;
      refused_reason: string | null;
    }>("select account_id, email, expires_at, refused_reason from codex_signins where id = 'default'");
    const row = rows[0];
    if (!row) return { check, ok: false, detail: 'CODEX_AUTH=chatgpt, but no sign-in is stored', fix: IMPORT };
    const state = signInState({
      accountId: row.account_id,
      email: row.email,
      expiresAt: row.expires_at,
      refusedReason: row.refused_reason,
    });
    return row.refused_reason ? { check, ok: false, detail: state, fix: IMPORT } : { check, ok: true, detail: state };
  } catch (error) {
    return { check, ok: false, detail: `cannot read it: ${describeError(error)}`, fix: 'see the database row' };
  } finally {
    await client.end().catch(() => undefined);
  }
}
