import type { ColumnType } from 'kysely';
import type { Timestamp } from './column-types.ts';

/** The installation's ChatGPT sign-in for Codex, its tokens sealed with PATCHBAY_SECRET_KEY (migration 023). */
export interface CodexSignInsTable {
  /** Always 'default': one sign-in per installation. */
  id: string;
  /** The ChatGPT account (workspace) id, sent as chatgpt-account-id. */
  account_id: string;
  email: string | null;
  access_token_ciphertext: string;
  refresh_token_ciphertext: string;
  id_token_ciphertext: string;
  /** The access token's `exp`; null when it carries none. */
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** Why OpenAI refused to refresh it: the sign-in is unusable until an operator signs in again. */
  refused_reason: string | null;
  updated_at: Timestamp;
}
