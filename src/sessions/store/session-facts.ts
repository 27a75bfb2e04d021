import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { SessionEvent, type EventOf } from '../../core/events.ts';
import type { PullState } from '../../core/pull-outcome.ts';
import { verdictCriteria, type VerdictCriterion } from '../../core/verdict.ts';
import { addUsage, estimateCostUsd } from '../../models/model-catalog.ts';
import { zeroUsage, type Usage } from '../../models/model-provider.ts';

/** What became of the session's pull request (see `pull_outcomes`). */
export type PullFacts = {
  number: number;
  url: string;
  state: PullState;
  openedAt: Date;
  finishedAt: Date | null;
  finishedBy: string | null;
  humanCommits: number;
  reviewRounds: number;
  reverted: boolean;
  mergeCi: string | null;
};

/** One session as Insights sees it: what Patchbay knew, and what became of its pull request. */
export type SessionFacts = {
  id: string;
  createdAt: Date;
  repo: string;
  /** Where it was asked for: slack, github, linear, web, cli. */
  surface: string;
  /** The model that used the most tokens; `none` before any model turn. */
  model: string;
  /** The router's class (src/harness/route-task.ts); `unrouted` when the run never got there. */
  taskClass: string;
  tokens: number;
  /** Estimated at list prices; null when a model has no known price. */
  costUsd: number | null;
  /** From creation to the last time it ended (completed, failed, cancelled); null while unfinished. */
  wallMs: number | null;
  checksPassed: number;
  checksFailed: number;
  /** The last verdict: its total (0..8) and its score per dimension. */
  verdict: { total: number; scores: Record<VerdictCriterion, number> } | null;
  /** Verdicts after the first: the agent's attempts after a gate sent it back. */
  reworks: number;
  questions: number;
  /** From creation to Patchbay's first word in the thread (a message, a question or the PR). */
  firstReplyMs: number | null;
  toPrMs: number | null;
  pull: PullFacts | null;
};

const factTypes = [
  'session-created',
  'task-routed',
  'usage',
  'check-finished',
  'verification-finished',
  'question-asked',
  'pr-opened',
  'status-changed',
] as const;
const ended = new Set(['completed', 'failed', 'cancelled']);

/** Facts of every session created in [from, to), with their pull request's outcome. */
export async function loadSessionFacts(
  db: Kysely<Database>,
  period: { from: Date; to: Date },
): Promise<SessionFacts[]> {
  const sessions = await db
    .selectFrom('sessions as s')
    .leftJoin('pull_outcomes as o', 'o.session_id', 's.id')
    .select(['s.id', 's.created_at', 's.repo'])
    .select([
      'o.number',
      'o.url',
      'o.state',
      'o.opened_at',
      'o.finished_at',
      'o.finished_by',
      'o.human_commits',
      'o.review_ids',
      'o.reverted_at',
      'o.merge_ci',
    ])
    .where('s.created_at', '>=', period.from)
    .where('s.created_at', '<', period.to)
    .orderBy('s.created_at')
    .execute();
  if (sessions.length === 0) return [];
  const ids = sessions.map((s) => s.id);
  const rows = await db
    .selectFrom('session_events')
    .select(['session_id', 'seq', 'data', 'at'])
    .where('session_id', 'in', ids)
    .where('type', 'in', [...factTypes])
    .execute();
  // Of the model's text only the first message matters (the first reply), not every turn's.
  const firstTexts = await db
    .selectFrom('session_events')
    .distinctOn('session_id')
    .select(['session_id', 'seq', 'data', 'at'])
    .where('session_id', 'in', ids)
    .where('type', '=', 'assistant-message')
    .orderBy('session_id')
    .orderBy('seq')
    .execute();
  rows.push(...firstTexts);
  rows.sort((a, b) => a.seq - b.seq);
  const eventsOf = new Map<string, { event: SessionEvent; at: Date }[]>();
  for (const r of rows) {
    const parsed = SessionEvent.safeParse(r.data);
    if (!parsed.success) continue;
    const list = eventsOf.get(r.session_id) ?? [];
    list.push({ event: parsed.data, at: new Date(r.at) });
    eventsOf.set(r.session_id, list);
  }
  // A session may have opened more than one PR over its follow-ups; the first row stands for it.
  const seen = new Set<string>();
  const facts: SessionFacts[] = [];
  for (const s of sessions) {
    if (seen.has(s.id)) continue;
    seen.add(s.id);
    const pull: PullFacts | null =
      s.number != null && s.url && s.state && s.opened_at
        ? {
            number: s.number,
            url: s.url,
            state: s.state as PullState,
            openedAt: new Date(s.opened_at),
            finishedAt: s.finished_at ? new Date(s.finished_at) : null,
            finishedBy: s.finished_by ?? null,
            humanCommits: s.human_commits?.length ?? 0,
            reviewRounds: s.review_ids?.length ?? 0,
            reverted: s.reverted_at != null,
            mergeCi: s.merge_ci ?? null,
          }
        : null;
    facts.push(factsOf({ id: s.id, createdAt: new Date(s.created_at), repo: s.repo }, eventsOf.get(s.id) ?? [], pull));
  }
  return facts;
}

/** Folds one session's events into its facts. */
export function factsOf(
  session: { id: string; createdAt: Date; repo: string },
  events: readonly { event: SessionEvent; at: Date }[],
  pull: PullFacts | null,
): SessionFacts {
  const since = (at: Date | undefined) => (at ? at.getTime() - session.createdAt.getTime() : null);
  const of = <T extends SessionEvent['type']>(type: T) =>
    events.filter((e) => e.event.type === type) as { event: EventOf<T>; at: Date }[];
  const usage = new Map<string, Usage>();
  for (const { event } of of('usage')) usage.set(event.model, addUsage(usage.get(event.model) ?? zeroUsage, event));
  const tokensOf = (u: Usage) => u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  const models = [...usage].sort((a, b) => tokensOf(b[1]) - tokensOf(a[1]));
  const prices = models.map(([model, u]) => estimateCostUsd(model, u));
  const verdicts = of('verification-finished').filter((v) => v.event.outcome !== 'not-run' && v.event.scores);
  const last = verdicts.at(-1)?.event;
  const checks = of('check-finished').filter((c) => c.event.phase === 'check');
  const firstReply = events.find(
    (e) => e.event.type === 'assistant-message' || e.event.type === 'question-asked' || e.event.type === 'pr-opened',
  );
  const end = of('status-changed')
    .filter((e) => ended.has(e.event.to))
    .at(-1);
  return {
    ...session,
    surface: of('session-created')[0]?.event.thread.source ?? 'unknown',
    model: models[0]?.[0] ?? 'none',
    taskClass: of('task-routed').at(-1)?.event.taskClass ?? 'unrouted',
    tokens: models.reduce((sum, [, u]) => sum + tokensOf(u), 0),
    costUsd: prices.every((p) => p !== undefined) ? prices.reduce<number>((sum, p) => sum + (p ?? 0), 0) : null,
    wallMs: since(end?.at),
    checksPassed: checks.filter((c) => c.event.outcome === 'passed').length,
    checksFailed: checks.filter((c) => c.event.outcome !== 'passed').length,
    verdict: last?.scores
      ? {
          total: last.total ?? 0,
          scores: Object.fromEntries(verdictCriteria.map((c) => [c, last.scores![c].score])) as Record<
            VerdictCriterion,
            number
          >,
        }
      : null,
    reworks: Math.max(0, (of('verification-finished').at(-1)?.event.attempt ?? 1) - 1),
    questions: of('question-asked').length,
    firstReplyMs: since(firstReply?.at),
    toPrMs: since(of('pr-opened')[0]?.at),
    pull,
  };
}
