import type { ColumnType, Generated, Kysely } from 'kysely';
import type { Counter, Json, Timestamp } from './column-types.ts';
import type { SessionArtifactsTable } from './schema-artifacts.ts';
import type { CodexSignInsTable } from './schema-engines.ts';
import type {
  GitHubCiFailuresTable,
  GitHubInstallationReposTable,
  GitHubInstallationsTable,
  GitHubDeliverySweepTable,
  GitHubPullAutofixTable,
  GitHubRepoFeaturesTable,
  GitHubRequestsTable,
  GitHubUserTokensTable,
  LinearAgentSessionsTable,
  LinearInstallationsTable,
  SlackPendingTasksTable,
  SlackPostsTable,
} from './integration-tables.ts';

/**
 * Each integration's own tables (db/integration-tables.ts): the only ones its database handle
 * reaches. Sessions, threads and events are read through the session store, never from here.
 */
export type IntegrationTables = {
  slack: 'slack_pending_tasks' | 'slack_posts';
  github:
    | 'github_installations'
    | 'github_installation_repos'
    | 'github_requests'
    | 'github_user_tokens'
    | 'github_repo_features'
    | 'github_delivery_sweep'
    | 'github_ci_failures'
    | 'github_pull_autofix';
  linear: 'linear_agent_sessions' | 'linear_installations';
};

/** A database handle typed with `integration`'s own tables only: a query on another table does not compile. */
export type IntegrationDb<Integration extends keyof IntegrationTables> = Kysely<
  Pick<Database, IntegrationTables[Integration]>
>;

/** Table types. JSON columns are validated with zod where they are read (see the stores). */
export interface Database {
  sessions: SessionsTable;
  session_threads: SessionThreadsTable;
  session_events: SessionEventsTable;
  session_messages: SessionMessagesTable;
  request_markers: RequestMarkersTable;
  slack_pending_tasks: SlackPendingTasksTable;
  slack_posts: SlackPostsTable;
  github_installations: GitHubInstallationsTable;
  github_installation_repos: GitHubInstallationReposTable;
  github_requests: GitHubRequestsTable;
  github_user_tokens: GitHubUserTokensTable;
  // what a repository's plan refuses (024)
  github_repo_features: GitHubRepoFeaturesTable;
  github_delivery_sweep: GitHubDeliverySweepTable;
  linear_agent_sessions: LinearAgentSessionsTable;
  linear_installations: LinearInstallationsTable;
  // harness gates (006)
  repo_knowledge: RepoKnowledgeTable;
  check_runs: CheckRunsTable;
  verdicts: VerdictsTable;
  inbound_deliveries: InboundDeliveriesTable;
  // GitHub CI follow-up (008)
  github_ci_failures: GitHubCiFailuresTable;
  github_pull_autofix: GitHubPullAutofixTable;
  modal_sandboxes: ModalSandboxesTable;
  modal_templates: ModalTemplatesTable;
  // scale-out (011)
  session_checkpoints: SessionCheckpointsTable;
  session_checkpoint_increments: SessionCheckpointIncrementsTable;
  // web page sessions (015)
  page_sessions: PageSessionsTable;
  // pull request outcomes (017)
  pull_outcomes: PullOutcomesTable;
  commit_signals: CommitSignalsTable;
  // session artifacts (018)
  session_artifacts: SessionArtifactsTable;
  codex_signins: CodexSignInsTable;
}

export interface SessionsTable {
  id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  status: string;
  repo: string;
  prompt: string;
  title: string;
  requester: Json;
  base_branch: string | null;
  branch: string | null;
  /** Highest event sequence number written; the next event gets last_seq + 1. */
  last_seq: Counter;
  /** The question the agent is waiting on, when status is 'waiting'. */
  pending_question: Json | null;
  /** What the run produced: branch, commit, PR link, summary. */
  result: Json | null;
  error: string | null;
  input_tokens: Counter;
  output_tokens: Counter;
  cache_read_tokens: Counter;
  cache_write_tokens: Counter;
  /** When the session last became queued (a trigger keeps it); null until then. */
  queued_at: ColumnType<Date | null, never, never>;
  /** Grows by one each time a run of the session starts or is taken over (migration 018). */
  run_epoch: ColumnType<string, number | undefined, number>;
  /** The process holding the run's lease, and until when (null: nobody). */
  lease_owner: string | null;
  lease_expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Set on a sub-task's session (migration 023): its parent, its 1-based place, title and spawning call. */
  parent_session_id: ColumnType<string | null, string | null | undefined, never>;
  subtask_index: ColumnType<number | null, number | null | undefined, never>;
  subtask_title: ColumnType<string | null, string | null | undefined, never>;
  spawn_call_id: ColumnType<string | null, string | null | undefined, never>;
}

export interface SessionThreadsTable {
  id: Generated<number>;
  session_id: string;
  /** Stable key of a shared thread (see threadKey); null for web and CLI threads. */
  thread_key: string | null;
  thread: Json;
  created_at: Timestamp;
  /** Highest event seq this thread has been told about. */
  replied_seq: Counter;
  /** The integration's own memory for the thread (for example the status message it edits). */
  state: Json | null;
}

export interface SessionEventsTable {
  session_id: string;
  seq: number;
  type: string;
  data: Json;
  at: Timestamp;
  /** Makes a replayed write (a resumed run) a no-op instead of a duplicate. */
  dedupe_key: string | null;
  /** The run epoch that wrote it (migration 018); null when no run did. */
  run_epoch: ColumnType<string | null, number | null | undefined, number | null>;
}

export interface SessionMessagesTable {
  session_id: string;
  idx: number;
  message: Json;
  /** For user messages: the seq of the user-message event they came from. */
  event_seq: number | null;
  created_at: Timestamp;
}

export interface RequestMarkersTable {
  source: string;
  dedupe_key: string;
  received_at: Timestamp;
}

// --- harness gates (006) ---

export interface RepoKnowledgeTable {
  /** The repository as sessions name it (normalised URL or path). */
  repo: string;
  built_from: string;
  extracted: Json;
  /** A person's edit; wins over `extracted` until the next edit. */
  edited: Json | null;
  edited_by: string | null;
  edited_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  lessons: ColumnType<unknown, string | undefined, string>;
  built_at: Timestamp;
}

export interface CheckRunsTable {
  id: Generated<number>;
  session_id: string;
  commit_sha: string;
  phase: string;
  name: string;
  command: string;
  outcome: string;
  exit_code: number | null;
  duration_ms: number;
  log_head: string;
  log_tail: string;
  reason: string | null;
  started_at: Timestamp;
  finished_at: Timestamp;
}

export interface VerdictsTable {
  id: Generated<number>;
  session_id: string;
  commit_sha: string;
  attempt: number;
  outcome: string;
  verdict: Json | null;
  summary: string;
  created_at: Timestamp;
}

/** Every surface's verified deliveries, stored before the ack and worked from the job queue (migration 005). */
export interface InboundDeliveriesTable {
  id: Generated<number>; // bigserial, read as a number (db/database.ts parses INT8 to numbers)
  source: string;
  dedupe_key: string;
  delivery_id: string | null;
  kind: string;
  body: string;
  received_at: Timestamp;
  queued_at: Timestamp | null;
  status: ColumnType<
    'pending' | 'done' | 'ignored' | 'failed',
    'pending' | 'done' | 'ignored' | 'failed' | undefined,
    'pending' | 'done' | 'ignored' | 'failed'
  >;
  attempts: Counter;
  last_error: string | null;
  outcome: string | null;
  finished_at: Timestamp | null;
  /** Deliveries with the same key are worked one at a time, in id order (migration 010-ordered-deliveries). */
  order_key: ColumnType<string | null, string | null | undefined, string | null>;
}

// --- Modal sandboxes (010) ---

export interface ModalSandboxesTable {
  session_id: string;
  sandbox_id: string | null;
  image_id: string | null;
  snapshot_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  used_at: Timestamp;
  released: ColumnType<boolean, boolean | undefined, boolean>;
  /** The run epoch that wrote it (migration 018); null when no run did. */
  run_epoch: ColumnType<string | null, number | null | undefined, number | null>;
  /** Whose sandbox of the session it is: the agent's, or the checks' own (migration 027). */
  role: ColumnType<'agent' | 'checks', 'agent' | 'checks' | undefined, 'agent' | 'checks'>;
}

export interface ModalTemplatesTable {
  repo: string;
  image_id: string;
  base_commit: string;
  created_at: Timestamp;
}

export interface SessionCheckpointsTable {
  session_id: string;
  /** Grows with every checkpoint of the session: an older one never replaces a newer one. */
  step: ColumnType<string, number | string, number | string>;
  head: string;
  tree: string;
  branch: string;
  base_branch: string;
  base_commit: string;
  /** A git bundle of the work against base_commit; null when it could not be taken (see unavailable). */
  bundle: Buffer | null;
  unavailable: string | null;
  /** The checkpoint commit the chain (bundle, then its increments) ends at; null for one stored before chains. */
  wip: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  /** The run epoch that wrote it (migration 018); null when no run did. */
  run_epoch: ColumnType<string | null, number | null | undefined, number | null>;
}

/** Checkpoints after the one in session_checkpoints.bundle, each a bundle against the one before (migration 015). */
export interface SessionCheckpointIncrementsTable {
  session_id: string;
  step: ColumnType<string, number | string, number | string>;
  /** The checkpoint commit this bundle needs (the chain's end before it). */
  parent: string;
  wip: string;
  bundle: Buffer;
  created_at: Timestamp;
  /** The run epoch that wrote it (migration 018); null when no run did. */
  run_epoch: ColumnType<string | null, number | null | undefined, number | null>;
}

// --- web page sessions (015) ---

export interface PageSessionsTable {
  /** SHA-256 of the cookie's random id (base64url); the id itself is never stored. */
  id_digest: string;
  /** Who signed in: `token` or `github:<login>`. */
  who: string;
  /** Digest of the API token the session was made under. */
  key_digest: string;
  created_at: ColumnType<Date, Date | undefined, never>;
  expires_at: ColumnType<Date, Date, Date>;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

// --- pull request outcomes (017) ---

export interface PullOutcomesTable {
  /** Lower case, as the key. */
  owner: string;
  repo: string;
  number: number;
  session_id: string;
  url: string;
  branch: string;
  base_branch: string;
  /** Patchbay's latest commit on the PR's branch. */
  patchbay_commit: string;
  opened_at: Timestamp;
  /** open | merged | closed */
  state: ColumnType<string, string | undefined, string>;
  finished_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  finished_by: string | null;
  merge_commit: string | null;
  /** SHAs people pushed after Patchbay's latest commit (a JSON array). */
  human_commits: ColumnType<string[], string | undefined, string>;
  /** Ids of the reviews people submitted (a JSON array): one review round each. */
  review_ids: ColumnType<number[], string | undefined, string>;
  reverted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revert_commit: string | null;
  /** The conclusion of CI on the merge commit (the default branch after the merge). */
  merge_ci: string | null;
  merge_ci_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  updated_at: Timestamp;
}

/**
 * What the default branch's webhooks said about a commit (CI, a revert of it), kept for a merge
 * commit whose pull request's merge is recorded after them: webhooks of a repository are not
 * ordered with those of a pull request, so a status can be worked before the PR's `closed`.
 */
export interface CommitSignalsTable {
  owner: string;
  repo: string;
  /** As the signal named it: a full SHA, or the prefix a revert message gave. */
  commit: string;
  ci: string | null;
  ci_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revert_commit: string | null;
  reverted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}
