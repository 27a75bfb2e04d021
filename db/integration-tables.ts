import type { ColumnType, Generated } from 'kysely';
import type { Json, Timestamp } from './column-types.ts';

// The integrations' own tables (Slack 003, GitHub 004, Linear 007, GitHub CI follow-up 008), part of
// the Database of schema.ts.

/** A Slack request waiting for its repository (no repo named, or several to choose from). */
export interface SlackPendingTasksTable {
  thread_key: string;
  thread: Json;
  text: string;
  actor: Json;
  /** The repos offered when the message named several; null when it named none. */
  candidates: Json | null;
  created_at: Timestamp;
}

/** Messages Patchbay posted in a Slack thread, by purpose (status, a question, the final reply). */
export interface SlackPostsTable {
  thread_key: string;
  post_key: string;
  ts: string;
  created_at: Timestamp;
}

/** Bigint ids from GitHub; read back as numbers (see the pg type parser in database.ts). */
type BigId = ColumnType<number, number | string, number | string>;

export interface GitHubInstallationsTable {
  id: BigId;
  account_login: string;
  account_type: string;
  repository_selection: string;
  suspended: ColumnType<boolean, boolean | undefined, boolean>;
  updated_at: Timestamp;
}

export interface GitHubInstallationReposTable {
  installation_id: BigId;
  repo_id: BigId;
  /** owner/name, lower-case. */
  full_name: string;
}

export interface GitHubRequestsTable {
  id: Generated<number>;
  /** Null until the session service has taken the request (the row is made first, so no event is missed). */
  session_id: string | null;
  thread_key: string;
  owner: string;
  repo: string;
  number: number;
  comment_kind: string;
  /** Null until the progress comment is posted (after the hand-off, so the run starts first). */
  comment_id: BigId | null;
  /** When a post of the progress comment was begun: a row with no comment_id is then in doubt (026). */
  comment_intended_at: Timestamp | null;
  /** The review comment a review-thread reply goes under (026); null for an issue comment. */
  reply_to: BigId | null;
  start_seq: number;
  last_body: string | null;
  finished: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: Timestamp;
}

export interface GitHubUserTokensTable {
  actor_key: string;
  github_login: string;
  github_id: BigId;
  token_ciphertext: string;
  updated_at: Timestamp;
}

/** What a repository's plan refuses, learnt from GitHub's answers (024): drafts on a private Free/Pro repository. */
export interface GitHubRepoFeaturesTable {
  /** owner/name, lower-case. */
  full_name: string;
  drafts: boolean;
  learnt_at: Timestamp;
}

/** Where the next look for lost webhook deliveries starts (024): one row, id 'app'. */
export interface GitHubDeliverySweepTable {
  id: string;
  since: ColumnType<Date, Date, Date>;
}

// --- Linear (007) ---

/** An agent session Linear opened for Patchbay, and the Patchbay session it became. */
export interface LinearAgentSessionsTable {
  agent_session_id: string;
  organization_id: string;
  issue_id: string;
  issue_identifier: string;
  session_id: string | null;
  pending: Json | null;
  created_at: Timestamp;
}

/** A workspace the app was installed in through OAuth (actor=app). */
export interface LinearInstallationsTable {
  organization_id: string;
  app_user_id: string;
  token_ciphertext: string;
  scope: string;
  updated_at: Timestamp;
  /** The refresh token, sealed like the access token; null for installs from before refresh tokens (016). */
  refresh_token_ciphertext: string | null;
  /** When the access token stops working; null when Linear did not say (016). */
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

// --- GitHub CI follow-up (008) ---

export interface GitHubCiFailuresTable {
  id: Generated<string>;
  owner: string;
  repo: string;
  number: number;
  head_sha: string;
  session_id: string;
  claimed_by: string;
  follow_up: boolean | null;
  names: ColumnType<unknown, string | undefined, string>;
  signature: string | null;
  reason: string | null;
  created_at: Timestamp;
}

export interface GitHubPullAutofixTable {
  owner: string;
  repo: string;
  number: number;
  enabled: boolean;
  set_by: string;
  updated_at: Timestamp;
}
