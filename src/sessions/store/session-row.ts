import { Actor } from '../../core/actor.ts';
import { PendingQuestion, SessionResult, type SessionRecord } from '../../core/session-record.ts';
import { SessionStatus } from '../../core/session-status.ts';

/** A `sessions` row as the database returns it. */
type Row = {
  id: string;
  created_at: Date;
  updated_at: Date;
  status: string;
  repo: string;
  prompt: string;
  title: string;
  requester: unknown;
  base_branch: string | null;
  branch: string | null;
  last_seq: number;
  pending_question: unknown;
  result: unknown;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  parent_session_id: string | null;
};

export function toSessionRecord(row: Row): SessionRecord {
  return {
    id: row.id,
    parentId: row.parent_session_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    status: SessionStatus.parse(row.status),
    repo: row.repo,
    prompt: row.prompt,
    title: row.title,
    requester: Actor.parse(row.requester),
    baseBranch: row.base_branch,
    branch: row.branch,
    lastSeq: row.last_seq,
    pendingQuestion: row.pending_question == null ? null : PendingQuestion.parse(row.pending_question),
    result: row.result == null ? null : SessionResult.parse(row.result),
    error: row.error,
    usage: {
      inputTokens: row.input_tokens,
      outputTokens: row.output_tokens,
      cacheReadTokens: row.cache_read_tokens,
      cacheWriteTokens: row.cache_write_tokens,
    },
  };
}
