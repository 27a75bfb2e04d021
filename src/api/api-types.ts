/**
 * The shapes the API answers with, shared by the routes and the typed web client (web/), which
 * imports them as types only.
 */
import type { Actor } from '../core/actor.ts';
import type { SessionStatus } from '../core/session-status.ts';
import type { ThreadRef, ThreadSource } from '../core/thread-ref.ts';
import type { DiffCommit, DiffFile } from '../git/branch-diff.ts';
import type { SessionRecord } from '../core/session-record.ts';
import type { SubtaskLine } from '../core/subtasks.ts';
import type { SessionCost } from './session-cost.ts';
import type { KnowledgeDocument, Lesson } from '../harness/knowledge/knowledge-document.ts';

export type { DiffCommit, DiffFile, SubtaskLine };

import type { CheckState } from '../sessions/store/session-summaries.ts';
import type { EventPage } from '../sessions/store/event-pages.ts';

export type { CheckState, EventPage };

export type SessionSummary = {
  id: string;
  createdAt: string;
  updatedAt: string;
  status: SessionStatus;
  repo: string;
  title: string;
  requester: Actor;
  branch: string | null;
  surfaces: ThreadSource[];
  prUrl: string | null;
  checks: CheckState;
  url: string;
  /** The session this one is a sub-task of; null for a session people started. */
  parentId: string | null;
};

export type SessionList = { sessions: SessionSummary[]; repos: string[] };

/** A thread of the session with a link to it, when it has one people can open. */
export type ThreadLink = ThreadRef & { url?: string; label: string };

/**
 * `GET /api/sessions/:id`: the session with its threads, cost and page, its sub-tasks (child
 * sessions) in order, and for a sub-task the session that spawned it.
 */
export type SessionDetail = SessionRecord & {
  threads: ThreadLink[];
  cost: SessionCost;
  url: string;
  children: SubtaskLine[];
  parent: { id: string; title: string } | null;
};

export type SessionDiff =
  | { state: 'none'; reason: string }
  | {
      state: 'ready';
      branch: string;
      base: string;
      head: string;
      /** The commit this diff is for, when one commit was asked for (`?commit=`). */
      commit?: string;
      commits: DiffCommit[];
      files: DiffFile[];
      /** The patch was cut at the size limit; `files` holds what fit. */
      truncated: boolean;
    };

/** `GET/PUT /api/repos/:repo/knowledge`: the document in use, what was extracted, a person's edit, lessons. */
export type RepoKnowledge = {
  repo: string;
  builtFrom: string;
  builtAt: string;
  source: 'edited' | 'extracted';
  document: KnowledgeDocument;
  extracted: KnowledgeDocument;
  edited: { document: KnowledgeDocument; by: string; at: string } | null;
  lessons: Lesson[];
};

export type { KnowledgeDocument, Lesson };
