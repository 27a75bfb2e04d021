/**
 * What the page accepts as the API's answers: a zod schema per response, built from the same
 * schemas the server validates with (events, actors, threads, knowledge documents) and checked
 * against the server's response types, so a schema that drifts from them does not compile. An
 * answer that does not parse is an error the page shows, never a page rendered from half of it.
 */
import { z } from 'zod';
import type {
  EventPage,
  RepoKnowledge,
  SessionDetail,
  SessionDiff,
  SessionList,
  SessionSummary,
  SubtaskLine,
} from '../../src/api/api-types.ts';
import { groupings, type InsightMetrics, type InsightsReport } from '../../src/api/insights-report.ts';
import { Actor } from '../../src/core/actor.ts';
import { StoredEvent } from '../../src/core/events.ts';
import type { PageSignInProvider } from '../../src/core/page-sign-in.ts';
import { PendingQuestion, SessionResult, type SessionRecord } from '../../src/core/session-record.ts';
import { SessionStatus } from '../../src/core/session-status.ts';
import { ThreadRef, type ThreadSource } from '../../src/core/thread-ref.ts';
import { KnowledgeDocument, Lesson } from '../../src/harness/knowledge/knowledge-document.ts';

const nullableNumber = z.number().nullable();
const Usage = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  cacheWriteTokens: z.number(),
});
const threadSources = ['slack', 'github', 'linear', 'web', 'cli'] as const satisfies readonly ThreadSource[];

/** `GET /api/auth`: whether the page needs signing in, whether it is, and the other ways to sign in. */
export const AuthState = z.object({
  required: z.boolean(),
  signedIn: z.boolean(),
  providers: z.array(z.object({ name: z.string(), url: z.string() }) satisfies z.ZodType<PageSignInProvider>),
});

const SessionSummarySchema = z.object({
  id: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  status: SessionStatus,
  repo: z.string(),
  title: z.string(),
  requester: Actor,
  branch: z.string().nullable(),
  surfaces: z.array(z.enum(threadSources)),
  prUrl: z.string().nullable(),
  checks: z.enum(['none', 'passed', 'failed', 'incomplete']),
  url: z.string(),
  parentId: z.string().nullable(),
}) satisfies z.ZodType<SessionSummary>;

/** `GET /api/sessions`. */
export const SessionListSchema = z.object({
  sessions: z.array(SessionSummarySchema),
  repos: z.array(z.string()),
}) satisfies z.ZodType<SessionList>;

const SessionRecordSchema = z.object({
  id: z.string(),
  parentId: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  status: SessionStatus,
  repo: z.string(),
  prompt: z.string(),
  title: z.string(),
  requester: Actor,
  baseBranch: z.string().nullable(),
  branch: z.string().nullable(),
  lastSeq: z.number(),
  pendingQuestion: PendingQuestion.nullable(),
  result: SessionResult.nullable(),
  error: z.string().nullable(),
  usage: Usage,
}) satisfies z.ZodType<SessionRecord>;

const SubtaskLineSchema = z.object({
  sessionId: z.string(),
  index: z.number(),
  title: z.string(),
  repo: z.string(),
  status: SessionStatus,
  branch: z.string().nullable(),
  commit: z.string().exactOptional(),
  prUrl: z.string().exactOptional(),
  error: z.string().nullable().exactOptional(),
}) satisfies z.ZodType<SubtaskLine>;

/** `GET /api/sessions/:id`. */
export const SessionDetailSchema = SessionRecordSchema.extend({
  threads: z.array(z.intersection(ThreadRef, z.object({ url: z.string().exactOptional(), label: z.string() }))),
  cost: z.object({
    usd: nullableNumber,
    byModel: z.array(z.object({ model: z.string(), usage: Usage, usd: nullableNumber })),
  }),
  url: z.string(),
  children: z.array(SubtaskLineSchema),
  parent: z.object({ id: z.string(), title: z.string() }).nullable(),
}) satisfies z.ZodType<SessionDetail>;

/** `GET /api/sessions/:id/events` with a page size. */
export const EventPageSchema = z.object({
  events: z.array(StoredEvent),
  nextBefore: z.number().nullable(),
}) satisfies z.ZodType<EventPage>;

/** `GET /api/sessions/:id/diff`. */
export const SessionDiffSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('none'), reason: z.string() }),
  z.object({
    state: z.literal('ready'),
    branch: z.string(),
    base: z.string(),
    head: z.string(),
    commit: z.string().exactOptional(),
    commits: z.array(z.object({ sha: z.string(), subject: z.string(), author: z.string(), at: z.string() })),
    files: z.array(
      z.object({
        path: z.string(),
        oldPath: z.string().exactOptional(),
        status: z.enum(['added', 'modified', 'deleted', 'renamed', 'copied', 'changed']),
        additions: z.number(),
        deletions: z.number(),
        binary: z.boolean(),
        patch: z.string(),
      }),
    ),
    truncated: z.boolean(),
  }),
]) satisfies z.ZodType<SessionDiff>;

/** `POST /api/sessions`: the new session. */
export const StartedSession = z.object({ id: z.string(), status: SessionStatus, url: z.string() });

/** `POST /api/sessions/:id/messages` and `/stop`. */
export const SessionAck = z.object({ id: z.string(), status: SessionStatus.optional() });

/** `POST /api/sessions/:id/egress-allow`: what was allowed. */
export const EgressAllowed = z.object({
  host: z.string(),
  port: z.number().optional(),
  scope: z.enum(['session', 'repository']),
});

/** `POST /api/repos/:repo/egress-allow/revoke`. */
export const EgressRevoked = z.object({ revoked: z.literal(true) });

/** `GET` and `PUT /api/repos/:repo/knowledge`. */
export const RepoKnowledgeSchema = z.object({
  repo: z.string(),
  builtFrom: z.string(),
  builtAt: z.string(),
  source: z.enum(['edited', 'extracted']),
  document: KnowledgeDocument,
  extracted: KnowledgeDocument,
  edited: z.object({ document: KnowledgeDocument, by: z.string(), at: z.string() }).nullable(),
  lessons: z.array(Lesson),
}) satisfies z.ZodType<RepoKnowledge>;

const InsightMetricsSchema = z.object({
  sessions: z.number(),
  prsOpened: z.number(),
  merged: z.number(),
  closed: z.number(),
  mergeRate: nullableNumber,
  medianTimeToMergeMs: nullableNumber,
  humanCommitsPerMerged: nullableNumber,
  reviewRoundsPerPr: nullableNumber,
  reverts: z.number(),
  mergeCiFailures: z.number(),
  costPerMergedUsd: nullableNumber,
  medianFirstReplyMs: nullableNumber,
  medianToPrMs: nullableNumber,
}) satisfies z.ZodType<InsightMetrics>;

const CalibrationRow = z.object({ decided: z.number(), merged: z.number(), mergeRate: nullableNumber });

/** `GET /api/insights`. */
export const InsightsReportSchema = z.object({
  from: z.string(),
  to: z.string(),
  groupBy: z.enum(groupings),
  totals: InsightMetricsSchema,
  groups: z.array(InsightMetricsSchema.extend({ key: z.string() })),
  pulls: z.array(
    z.object({
      sessionId: z.string(),
      repo: z.string(),
      model: z.string(),
      taskClass: z.string(),
      number: z.number(),
      url: z.string(),
      state: z.string(),
      openedAt: z.string(),
      finishedAt: z.string().nullable(),
      finishedBy: z.string().nullable(),
      humanCommits: z.number(),
      reviewRounds: z.number(),
      reverted: z.boolean(),
      mergeCi: z.string().nullable(),
      verdictTotal: nullableNumber,
      costUsd: nullableNumber,
    }),
  ),
  calibration: z.object({
    byBand: z.array(CalibrationRow.extend({ band: z.string() })),
    byDimension: z.array(CalibrationRow.extend({ dimension: z.string(), score: z.number() })),
  }),
}) satisfies z.ZodType<InsightsReport>;

/** An error answer's body, for its message; anything else in it is ignored. */
export const ErrorBody = z
  .object({
    message: z.string().optional(),
    error: z.string().optional(),
    issues: z.array(z.object({ message: z.string() })).optional(),
  })
  .catch({});
