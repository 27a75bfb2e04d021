import type { Logger } from 'pino';
import type { Actor } from '../../src/core/actor.ts';
import type { Interpretation } from '../../src/core/delivery-interpreter.ts';
import type { RepoRef } from '../../src/core/repo-ref.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { Activity, LinearApi } from './linear-api.ts';
import type { LinearApis } from './linear-apis.ts';
import type { RepoCatalog } from './linear-repo-choice.ts';
import type { LinearUploadDeps } from './linear-uploads.ts';
import type { LinearAgentSession, LinearStore, PendingTask } from './linear-store.ts';
import type { AgentSessionEvent } from './linear-webhook.ts';
import { stableUuid } from './stable-uuid.ts';

/**
 * The steps both halves of the Linear interpreter take (a new agent session in linear-interpreter.ts, a
 * prompt in linear-prompts.ts): what they work with, the errand they hand the reply step, posting
 * an activity once, asking for the repository, and starting the session.
 */

/** What the Linear interpreter works with: its tables, a workspace's API, the session service's lookups, the repositories. */
export type LinearSurfaceDeps = {
  store: LinearStore;
  /** Each workspace's API, with its token. */
  apis: LinearApis;
  context: Pick<IntegrationContext, 'publicUrl' | 'sessions'>;
  repos: RepoCatalog;
  teamRepos: Record<string, string>;
  /** Takes the pictures a task or prompt links to (Linear uploads) in; without it they are left out. */
  uploads?: LinearUploadDeps;
  log: Logger;
};

/**
 * What the Linear interpreter does once the session service handled an agent session's event (its
 * reply step), as data. `bind-started`: bind the agent session to the session that started (or the
 * one a retry finds), link its page, and for a delegated issue move it to its first started state;
 * `bind-joined`: the same for a session the issue's pull request belongs to; `explain-stop`: say why
 * nothing stopped; `ack-prompt`: acknowledge a prompt that reached the session.
 */
export type LinearErrand =
  | {
      kind: 'bind-started';
      organizationId: string;
      agentSessionId: string;
      thread: ThreadRef;
      moveIssue?: { issueId: string; stateId: string };
    }
  | { kind: 'bind-joined'; organizationId: string; agentSessionId: string; sessionId: string }
  | { kind: 'explain-stop'; organizationId: string; agentSessionId: string; seed: string }
  | { kind: 'ack-prompt'; organizationId: string; agentSessionId: string; sessionId: string; seed: string };

/** What interpreting an AgentSessionEvent comes to: a command with its errand, or why there is none. */
export type Interpreted = Interpretation<LinearErrand>;

/** One AgentSessionEvent being interpreted: the deps, the event, its workspace's API, its dedupe key. */
export type EventScope = {
  deps: LinearSurfaceDeps;
  event: AgentSessionEvent;
  api: LinearApi;
  key: string;
  log: Logger;
};

const emailLike = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A Linear user as an Actor (the email only when it is one). */
export const toActor = (user: { id: string; name: string; email?: string | undefined } | null | undefined): Actor =>
  user
    ? {
        source: 'linear',
        id: user.id,
        name: user.name,
        ...(user.email && emailLike.test(user.email) && { email: user.email }),
      }
    : { source: 'linear', id: 'unknown', name: 'A Linear user' };

/**
 * The person who started an agent session, with the GitHub account they linked in Linear: the
 * repositories their session touches are checked against that account's access. A
 * person Linear does not know (no creator) has none.
 */
export async function requesterOf(
  api: LinearApi,
  user: { id: string; name: string; email?: string | undefined } | null | undefined,
): Promise<Actor> {
  const actor = toActor(user);
  if (!user) return actor;
  const githubId = await api.gitHubUserId(user.id);
  return githubId && /^\d+$/.test(githubId) ? { ...actor, githubId } : actor;
}

/** Nothing for the session service, and why. */
export const ignore = (reason: string): Interpreted => ({ kind: 'ignore', reason });

/** Posts an activity whose id is derived from the agent session and `seed`, so a retry posts it once. */
export const post = (api: LinearApi, agentSessionId: string, seed: string, activity: Activity) =>
  api.postActivity(agentSessionId, { ...activity, id: stableUuid(`${agentSessionId}:${seed}`) });

/** Said when an agent session has no issue to work from. */
export const noIssueActivity: Activity = {
  content: { type: 'error', body: 'I can only work from an issue: mention me on an issue or delegate one to me.' },
};

/** Starts the session; `reply` binds the agent session to it once the service took it. */
export function start(
  scope: EventScope,
  row: LinearAgentSession,
  input: { thread: ThreadRef; actor: Actor; text: string; repo: RepoRef },
  moveIssue?: { issueId: string; stateId: string },
): Interpreted {
  return {
    kind: 'inbound',
    inbound: {
      kind: 'start',
      thread: input.thread,
      actor: input.actor,
      text: input.text,
      repo: scope.deps.repos.repoUrl(input.repo),
      dedupeKey: scope.key,
    },
    errand: {
      kind: 'bind-started',
      organizationId: scope.event.organizationId,
      agentSessionId: row.agentSessionId,
      thread: input.thread,
      ...(moveIssue && { moveIssue }),
    },
  };
}

/** Asks which repository to work in (a select elicitation when there are candidates) and keeps the task. */
export async function ask(scope: EventScope, row: LinearAgentSession, pending: PendingTask, seed: string) {
  await scope.deps.store.update(row.agentSessionId, { pending });
  const options = pending.candidates.map((value) => ({ value }));
  const body = options.length
    ? 'Which repository should I work in?'
    : 'Which repository should I work in? Reply with its GitHub URL (https://github.com/owner/repo).';
  await post(scope.api, row.agentSessionId, seed, {
    content: { type: 'elicitation', body },
    ...(options.length && { options }),
  });
}
