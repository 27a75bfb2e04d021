import type { ToolExecutor } from '../agent/agent-runner.ts';
import type { ToolContext } from '../agent/tool.ts';
import type { ApprovalRules } from '../core/approval-rules.ts';
import { type Autonomy, type AutonomySource, resolveAutonomy } from '../core/autonomy.ts';
import type { RunLog } from '../core/run-log.ts';

/** The installation's approval settings as the harness is given them (AUTONOMY, APPROVAL_RULES, APPROVAL_TIMEOUT_MINUTES). */
export type ApprovalSettings = { autonomy: Autonomy; rules: ApprovalRules; timeoutMs: number };

/** A run's autonomy and where it came from. */
export type RunAutonomy = { level: Autonomy; source: AutonomySource };

/**
 * The run's autonomy: the requester's words (the `session-created` event), over the repository's
 * knowledge document, over the installation's setting. Recorded as an `autonomy-set` event when it
 * differs from the last one, so the page and the log show what the run works under. Without
 * approval settings (a harness built without them) nothing waits for a person: `full`.
 */
export async function settleAutonomy(
  store: Pick<RunLog, 'events' | 'commitStep'>,
  sessionId: string,
  layers: { repository?: Autonomy | undefined; installation?: ApprovalSettings | undefined },
): Promise<RunAutonomy> {
  const events = await store.events(sessionId, { types: ['session-created', 'autonomy-set'] });
  const created = events.find((e) => e.event.type === 'session-created')?.event;
  const resolved = resolveAutonomy({
    session: created?.type === 'session-created' ? created.autonomy : undefined,
    repository: layers.repository,
    installation: layers.installation?.autonomy ?? 'full',
  });
  const last = events.findLast((e) => e.event.type === 'autonomy-set')?.event;
  const same = last?.type === 'autonomy-set' && last.level === resolved.level && last.source === resolved.source;
  if (!same) await store.commitStep(sessionId, { events: [{ event: { type: 'autonomy-set', ...resolved } }] });
  return resolved;
}

/**
 * What the shell tool is told about approvals: the installation's rules under the repository's,
 * and whether a risky command may be held at all. `full` holds nothing; what the rules refuse
 * stays refused, and the command policy's plain refusals apply.
 */
export function approvalsFor(
  level: Autonomy,
  installation: ApprovalSettings | undefined,
  repository: ApprovalRules | undefined,
): ToolContext['approvals'] {
  if (!installation) return undefined;
  const rules = [installation.rules, repository ?? {}];
  return level === 'full' ? { rules, holds: false } : { rules };
}

/** Tools that read and change nothing: a plan-first session may use them before its go. */
const READ_ONLY = new Set(['read_file', 'list_files', 'search', 'git_status', 'git_diff', 'ask_user']);

/** What a locked tool answers. */
export const WAITING_FOR_GO =
  'Refused: waiting for go. This session is plan-first: nothing may change until a person replies "go" to your plan. Read what you need, then present the plan as your final message and end your turn.';

/**
 * The tools of a plan-first session before its go: the read-only ones as they are, every other
 * call refused with WAITING_FOR_GO (nothing runs, so nothing changes in the workspace).
 */
export function lockedUntilGo(tools: ToolExecutor): ToolExecutor {
  return onlyReadOnly(tools, WAITING_FOR_GO);
}

/** The read-only tools as they are; every other call refused with `refusal` (nothing runs). */
export function onlyReadOnly(tools: ToolExecutor, refusal: string): ToolExecutor {
  return {
    specs: () => tools.specs(),
    async execute(call, ctx) {
      if (READ_ONLY.has(call.name)) return tools.execute(call, ctx);
      return { content: refusal, isError: true };
    },
    ...(tools.rerunsInterrupted && { rerunsInterrupted: (call) => tools.rerunsInterrupted!(call) }),
  };
}

/** The system block a plan-first session's agent gets: before the go, plan; after it, do the plan. */
export function planFirstGuidance(locked: boolean): string {
  if (!locked)
    return '# Plan approved\nA person said go to your plan: carry it out now, and take into account what they said about it.';
  return [
    '# Plan first',
    'This session is plan-first: a person approves your plan before anything changes.',
    'Read what you need with the read-only tools (read_file, list_files, search, git_status, git_diff), then write the plan as your final message: what you will change, in which files, and how you will check it. End your turn there; the harness posts the plan in the thread.',
    'Every other tool is refused until a person replies "go". A reply that is not a go is feedback: revise the plan and present it again.',
  ].join('\n');
}
