import type { StoredEvent } from '../core/events.ts';
import type { RunLog, TransitionResult } from '../core/run-log.ts';
import type { RunLimits } from '../agent/agent-runner.ts';
import { budgetCostUsd } from '../models/model-catalog.ts';
import { harnessQuestionCall } from './gates/harness-messages.ts';
import type { HarnessDeps } from './run-session.ts';
import type { Route } from './route-task.ts';

/** A budget a run reached: what it spent of what limit (dollars, or minutes). */
export type BudgetReached = { kind: 'cost' | 'time'; spent: number; limit: number };

/**
 * This round's budgets: the task class's share, the cost extended once for every pause someone
 * answered "continue" to, less what the session's sub-tasks or parent spent; the time is what is
 * left of the run's, which spans every round.
 */
export async function budgetLimits(
  sessionId: string,
  deps: Pick<HarnessDeps, 'gates' | 'store' | 'subtasks'>,
  route: Route | undefined,
  startedAt: number,
): Promise<Partial<RunLimits> & { timeLimitMinutes?: number }> {
  const { gates, store } = deps;
  if (!gates || !route) return {};
  const events = await store.events(sessionId, { types: ['usage', 'budget-reached'] });
  const extensions = (kind: 'cost' | 'time') =>
    events.filter((e) => e.event.type === 'budget-reached' && e.event.kind === kind).length;
  const costLimit = gates.maxCostUsd * route.costShare * (1 + extensions('cost'));
  const spent = costOf(events) + (await familyCost(sessionId, deps));
  const timeLimitMinutes = gates.maxMinutes * route.timeShare;
  return {
    maxCostUsd: Math.max(0, costLimit - spent),
    maxWallMs: Math.max(0, timeLimitMinutes * 60_000 - (Date.now() - startedAt)),
    timeLimitMinutes,
  };
}

/**
 * The runner counted from its own start against what was left of the run's time: the thread gets
 * the run's figures (`timeLimitMinutes` is the whole run's time budget).
 */
export function runBudget(reached: BudgetReached, timeLimitMinutes: number | undefined): BudgetReached {
  return reached.kind === 'time' && timeLimitMinutes !== undefined
    ? { kind: 'time', spent: timeLimitMinutes - reached.limit + reached.spent, limit: timeLimitMinutes }
    : reached;
}

const minutes = (m: number) => (m < 10 ? m.toFixed(1) : String(Math.round(m)));

/** A budget reached is a question, not a failure: "spent $X of $Y; continue?" */
export async function pauseForBudget(
  sessionId: string,
  budget: BudgetReached,
  store: RunLog,
): Promise<TransitionResult> {
  const events = await store.events(sessionId, { types: ['usage', 'budget-reached'] });
  const total = costOf(events);
  const previous = events.filter((e) => e.event.type === 'budget-reached').length;
  const text =
    budget.kind === 'cost'
      ? `I have spent $${total.toFixed(2)} of this task's $${(total - budget.spent + budget.limit).toFixed(2)} budget. Continue?`
      : `This run has worked for ${minutes(budget.spent)} of its ${minutes(budget.limit)} minutes. Continue?`;
  const questionId = `budget:${previous + 1}`;
  return store.transition(sessionId, 'ask', {
    reason: `${budget.kind} budget reached`,
    patch: {
      pendingQuestion: {
        questionId,
        toolCallId: harnessQuestionCall,
        question: text,
        choices: ['Continue', 'Stop'],
        recommended: 'Continue',
      },
    },
    events: [
      {
        event: {
          type: 'budget-reached',
          kind: budget.kind,
          spent: budget.kind === 'cost' ? total : budget.spent,
          limit: budget.kind === 'cost' ? total - budget.spent + budget.limit : budget.limit,
        },
      },
      {
        event: {
          type: 'question-asked',
          questionId,
          question: text,
          choices: ['Continue', 'Stop'],
          recommended: 'Continue',
        },
      },
    ],
    unlessUnread: true,
  });
}

/**
 * Dollars the rest of the session's family spent (a parent's budget covers its
 * children): for a parent, its children's; for a child, its parent's and its siblings'.
 */
async function familyCost(sessionId: string, deps: Pick<HarnessDeps, 'store' | 'subtasks'>): Promise<number> {
  if (!deps.subtasks) return 0;
  const root = (await deps.store.get(sessionId))?.parentId ?? sessionId;
  const family = [root, ...(await deps.subtasks.store.children(root)).map((c) => c.sessionId)];
  let usd = 0;
  for (const id of family.filter((id) => id !== sessionId))
    usd += costOf(await deps.store.events(id, { types: ['usage'] }));
  return usd;
}

/** Dollars spent so far at list prices (a model without a known price at `unknownModelPrice`). */
function costOf(events: readonly StoredEvent[]): number {
  let usd = 0;
  for (const { event } of events) if (event.type === 'usage') usd += event.usd ?? budgetCostUsd(event.model, event);
  return usd;
}
