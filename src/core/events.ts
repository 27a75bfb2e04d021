import { z } from 'zod';
import { Actor } from './actor.ts';
import { Autonomy, AutonomySource } from './autonomy.ts';
import { AttachmentRef } from './attachment.ts';
import { ModeSource, SessionMode } from './session-mode.ts';
import { SessionStatus } from './session-status.ts';
import { ThreadRef } from './thread-ref.ts';
import { CheckOutcome, TaskClass, Verdict } from './verdict.ts';

/**
 * The one vocabulary between layers, the API and the web page. Every event is appended to the
 * session's log with a per-session sequence number; status, transcript and replies derive from it.
 */
/** Who allowed or revoked which host for what, where and when (the `egress-allowed` and `egress-revoked` audit). */
const egressDecision = {
  host: z.string(),
  port: z.number().int().min(1).max(65535).optional(),
  scope: z.enum(['session', 'repository']),
  actor: Actor,
  surface: z.string(),
  at: z.string(),
};

export const SessionEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('session-created'),
    repo: z.string(),
    prompt: z.string(),
    actor: Actor,
    thread: ThreadRef,
    /** The level the requester's first words asked for ("plan first: …"), removed from `prompt`. */
    autonomy: Autonomy.optional(),
  }),
  z.object({ type: z.literal('thread-added'), thread: ThreadRef }),
  z.object({
    type: z.literal('user-message'),
    actor: Actor,
    text: z.string(),
    /** Set when the message answers a question the agent asked. */
    questionId: z.string().optional(),
    /** Pictures attached to the message (session artifacts); the runner gives the model their bytes. */
    attachments: z.array(AttachmentRef).optional(),
  }),
  z.object({ type: z.literal('assistant-message'), text: z.string(), turn: z.number().int().nonnegative() }),
  z.object({
    type: z.literal('tool-start'),
    callId: z.string(),
    name: z.string(),
    input: z.unknown(),
  }),
  z.object({
    type: z.literal('tool-end'),
    callId: z.string(),
    name: z.string(),
    isError: z.boolean(),
    output: z.string(),
    durationMs: z.number().nonnegative(),
  }),
  z.object({
    type: z.literal('question-asked'),
    questionId: z.string(),
    question: z.string(),
    choices: z.array(z.string()).optional(),
    recommended: z.string().optional(),
  }),
  z.object({ type: z.literal('question-answered'), questionId: z.string(), actor: Actor, text: z.string() }),
  /** The autonomy a run works under and which setting gave it; written when it changes. */
  z.object({ type: z.literal('autonomy-set'), level: Autonomy, source: AutonomySource }),
  /** A person said "go" to the plan a plan-first session asked about: from here the agent may change files. */
  /**
   * Whether the session answers a question read-only (`ask`) or changes code (`do`), who chose it
   * and why; written when a run starts and the mode is new (the first request, a "fix it" after an answer).
   */
  z.object({ type: z.literal('mode-chosen'), mode: SessionMode, source: ModeSource, reason: z.string() }),
  z.object({ type: z.literal('plan-approved'), questionId: z.string(), actor: Actor }),
  /**
   * A command held before it ran until a person approves it; `requestId` is its tool
   * call's id, or `push:<seq>` for a push the harness holds (autonomy ask-before-push).
   */
  z.object({
    type: z.literal('approval-requested'),
    requestId: z.string(),
    command: z.string(),
    /** The risk classes it was held for: force-push, publish, pipe-to-shell, deploy, delete-outside, unclear. */
    classes: z.array(z.string()),
    reasons: z.array(z.string()),
    /** What approving does, in the words the thread is shown. */
    approving: z.string(),
    expiresAt: z.string(),
  }),
  /** A person's answer to an approval request, or its expiry (no actor then). */
  z.object({
    type: z.literal('approval-decided'),
    requestId: z.string(),
    decision: z.enum(['approved', 'denied', 'expired']),
    actor: Actor.optional(),
    /** Where the answer came from: slack, github, linear, web, or system for an expiry. */
    surface: z.string(),
    reason: z.string().optional(),
    at: z.string(),
  }),
  z.object({
    type: z.literal('status-changed'),
    from: SessionStatus,
    to: SessionStatus,
    reason: z.string().optional(),
  }),
  z.object({
    type: z.literal('workspace-ready'),
    branch: z.string(),
    baseBranch: z.string(),
    baseCommit: z.string(),
  }),
  z.object({ type: z.literal('diff-updated'), stat: z.string(), filesChanged: z.number().int().nonnegative() }),
  // --- harness gates: checks, verdicts, review gate, knowledge, routing, CI follow-up ---
  z.object({
    type: z.literal('check-finished'),
    /** The exact commit (full SHA) the command ran on; setup runs on the base commit. */
    commit: z.string(),
    /** `setup` installs dependencies before the agent; `check` is a test/lint/typecheck/build command. */
    phase: z.enum(['setup', 'check']),
    /** Short label from the knowledge document: `test`, `lint`, `typecheck`, `build`, `install`, … */
    name: z.string(),
    command: z.string(),
    outcome: CheckOutcome,
    /** Null when the command did not run or was killed. */
    exitCode: z.number().int().nullable(),
    durationMs: z.number().nonnegative(),
    /** First and last lines of the combined output (each at most a few KiB). */
    logHead: z.string(),
    logTail: z.string(),
    /** Why it did not run, for `not-run`. */
    reason: z.string().optional(),
  }),
  z.object({
    type: z.literal('verification-finished'),
    commit: z.string(),
    /** 1 for the first verdict on this session's work, 2 after the rework, … */
    attempt: z.number().int().positive(),
    /** `not-run`: the verifier model gave no verdict (the reason is in `summary`). */
    outcome: z.enum(['passed', 'failed', 'not-run']),
    /** Sum of the four scores, 0..8; absent when not run. */
    total: z.number().int().min(0).max(8).optional(),
    scores: Verdict.omit({ summary: true }).optional(),
    summary: z.string(),
  }),
  z.object({
    type: z.literal('review-gate'),
    commit: z.string(),
    /** True only when every check ran and passed and the verdict passed on exactly this commit. */
    ready: z.boolean(),
    /** What kept it from ready (failed or not-run checks, a failed verdict), empty when ready. */
    reasons: z.array(z.string()),
  }),
  z.object({
    type: z.literal('knowledge-loaded'),
    repo: z.string(),
    /** The default-branch commit the document was built from. */
    commit: z.string(),
    /** `edited`: a person's edit is in use; `extracted`: built from the repo's files. */
    source: z.enum(['extracted', 'edited']),
    /** True when this run built it (first use, or the default branch moved). */
    rebuilt: z.boolean(),
    setup: z.array(z.string()),
    checks: z.array(z.string()),
  }),
  z.object({
    type: z.literal('task-routed'),
    taskClass: TaskClass,
    reason: z.string(),
    maxCostUsd: z.number().nonnegative(),
    maxMinutes: z.number().nonnegative(),
  }),
  z.object({
    type: z.literal('budget-reached'),
    kind: z.enum(['cost', 'time']),
    spent: z.number().nonnegative(),
    limit: z.number().nonnegative(),
  }),
  z.object({
    type: z.literal('ci-failed'),
    commit: z.string(),
    pullNumber: z.number().int().positive(),
    /** The failing check run, check suite or workflow run as GitHub names it. */
    name: z.string(),
    url: z.string().optional(),
    logExcerpt: z.string(),
    /** Whether a follow-up run was started; when not, `reason` says why. */
    followUp: z.boolean(),
    reason: z.string().optional(),
  }),
  // --- end harness gates ---
  z.object({
    type: z.literal('branch-pushed'),
    branch: z.string(),
    commit: z.string(),
    remote: z.string(),
  }),
  z.object({
    type: z.literal('pr-opened'),
    url: z.string(),
    number: z.number().int().positive(),
    branch: z.string(),
    commit: z.string(),
  }),
  /**
   * Before/after screenshots of the pages a UI change touches, taken by the harness on the base
   * commit and on `commit`; each side is a session artifact id, or absent with the reason in `note`.
   */
  z.object({
    type: z.literal('ui-screenshots'),
    commit: z.string(),
    pages: z.array(
      z.object({
        url: z.string(),
        before: z.string().optional(),
        after: z.string().optional(),
        note: z.string().optional(),
      }),
    ),
  }),
  z.object({
    type: z.literal('usage'),
    turn: z.number().int().nonnegative(),
    model: z.string(),
    inputTokens: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
    cacheReadTokens: z.number().int().nonnegative(),
    cacheWriteTokens: z.number().int().nonnegative(),
    /**
     * Dollars at the price the model was run with, when that was not the catalog's (MODEL_PRICES, or
     * zero for a server people run themselves); absent: the catalog prices it by name.
     */
    usd: z.number().nonnegative().optional(),
  }),
  z.object({
    type: z.literal('context-compacted'),
    summary: z.string(),
    messagesReplaced: z.number().int().nonnegative(),
  }),
  z.object({ type: z.literal('error'), code: z.string(), message: z.string() }),
  /** The sandbox's egress proxy refused a connection (once per host per session), so a person can allow it. */
  z.object({
    type: z.literal('egress-blocked'),
    host: z.string(),
    port: z.number().int().min(0).max(65535),
    /** not-allowed | loopback | private | link-local | reserved | patchbay */
    reason: z.string(),
  }),
  /**
   * A person allowed a host the sandbox was refused: for this session, or for the
   * repository (kept in its knowledge document). The audit of who, where and when.
   */
  z.object({
    type: z.literal('egress-allowed'),
    ...egressDecision,
  }),
  /** A repository's allowance was revoked (from the page's Repo tab), recorded on the session that allowed it. */
  z.object({
    type: z.literal('egress-revoked'),
    ...egressDecision,
  }),
  /** A run that was interrupted (its worker crashed or shut down) and is taken up again from the log. */
  z.object({ type: z.literal('run-resumed'), reason: z.string() }),
  /**
   * The session is queued and no worker has started it yet: `ahead` sessions were queued before it,
   * `running` are running, of at most `limit` (MAX_RUNNING_SESSIONS) when set. `since` is when it
   * was queued; once per wait.
   */
  z.object({
    type: z.literal('queue-waiting'),
    ahead: z.number().int().nonnegative(),
    running: z.number().int().nonnegative(),
    limit: z.number().int().positive().optional(),
    since: z.string(),
  }),
  /**
   * The model service failed a call in a way that passes (overloaded, rate limited, down, an answer
   * cut short) and the run waits to try again: written once per run, so the thread hears it once.
   */
  z.object({
    type: z.literal('model-waiting'),
    code: z.string(),
    message: z.string(),
    retryInMs: z.number().int().nonnegative(),
  }),
  /** A session that was told it waits has been taken by a worker, after `waitedMs`. */
  z.object({ type: z.literal('queue-started'), waitedMs: z.number().int().nonnegative(), since: z.string() }),
  /** The agent's spawn_subtasks call `callId` created these child sessions; the parent waits for them. */
  z.object({
    type: z.literal('subtasks-spawned'),
    callId: z.string(),
    children: z.array(
      z.object({
        sessionId: z.string(),
        index: z.number().int().positive(),
        title: z.string(),
        repo: z.string(),
        branch: z.string(),
      }),
    ),
  }),
  /**
   * A repository the agent named (a sub-task's) was refused before anything was cloned or read
   * there: the requester may not have work done on it. Once per call and repository.
   */
  z.object({ type: z.literal('repo-refused'), repo: z.string(), reason: z.string() }),
  /**
   * What the repository's learned rules say before its pull request opens (a contributor licence
   * agreement Patchbay cannot sign, with its link): told in the thread first, once per commit.
   */
  z.object({ type: z.literal('publish-notice'), text: z.string() }),
  /** A child session of this one ended (on the parent's log, once per child and call). */
  z.object({
    type: z.literal('subtask-ended'),
    sessionId: z.string(),
    index: z.number().int().positive(),
    status: SessionStatus,
  }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
export type SessionEventType = SessionEvent['type'];
export type EventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;

/** An event as stored in the log. `seq` starts at 1 and has no gaps within a session. */
export const StoredEvent = z.object({
  sessionId: z.string(),
  seq: z.number().int().positive(),
  at: z.string(),
  event: SessionEvent,
});
export type StoredEvent = z.infer<typeof StoredEvent>;
