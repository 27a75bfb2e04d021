import type { Logger } from 'pino';
import type { Actor } from '../core/actor.ts';
import type { EventOf } from '../core/events.ts';
import { unjudgedCommit, type GateDecision } from '../core/evidence.ts';
import type { RunLog } from '../core/run-log.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { firstGitEnv } from '../core/publisher.ts';
import { pushBranch, type PushBranchResult } from '../git/push-branch.ts';
import type { SessionRun } from './session-run.ts';
import { isHuman } from './gates/harness-messages.ts';

/** What committing the agent's work left: whether anything changed since the base, and the diff's size. */
export type Committed = { changed: boolean; head: string; stat: string; filesChanged: number };

/** Everyone beside the requester who wrote to the session: the commit's co-authors. */
export async function coAuthorsOf(session: SessionRecord, store: RunLog): Promise<Actor[]> {
  const messages = (await store.events(session.id, { types: ['user-message'] })).map(
    (e) => e.event as EventOf<'user-message'>,
  );
  return uniqueActors(messages.map((m) => m.actor).filter(isHuman)).filter(
    (a) => a.id !== session.requester.id || a.source !== session.requester.source,
  );
}

function uniqueActors(actors: Actor[]): Actor[] {
  const seen = new Map<string, Actor>();
  for (const actor of actors) seen.set(`${actor.source}:${actor.id}`, actor);
  return [...seen.values()];
}

/** The session's title, the agent's summary and a link back to the session. */
export function commitMessage(session: SessionRecord, summary: string, publicUrl?: string): string {
  const body = summary.trim().slice(0, 4000);
  const link = publicUrl
    ? `\n\nPatchbay session: ${publicUrl.replace(/\/$/, '')}/sessions/${session.id}`
    : `\n\nPatchbay session ${session.id}`;
  return `${session.title}\n\n${body || 'Changes made by Patchbay.'}${link}`;
}

/**
 * The gate judged one commit. Anything else that got pushed (the branch moved after the checks)
 * is published as not verified: draft, a failing status on it, never the judged commit's verdict.
 */
export function publishedDecision(
  gate: GateDecision | undefined,
  pushed: string,
  log: Logger,
): GateDecision | undefined {
  const decision = gate && (gate.commit === pushed ? gate : unjudgedCommit(pushed, gate.commit));
  if (gate && decision !== gate)
    log.warn({ judged: gate.commit, pushed }, 'the pushed commit is not the judged one; publishing it as not verified');
  return decision;
}

/** Pushes the session's branch from the sandbox, only while this run holds the session. */
export async function pushWork(run: SessionRun): Promise<PushBranchResult> {
  const { session, deps, sandbox, workspace, signal, log } = run;
  const env = await firstGitEnv(deps.gitCredentials ?? [], session.repo, signal);
  // A push cannot be undone by a refused write: it goes out only while this run holds the session.
  await deps.store.assertCurrent?.(session.id);
  return pushBranch({
    ...(env && { env }),
    sandbox,
    ...(workspace.workspaceDir && { workspaceDir: workspace.workspaceDir }),
    repo: session.repo,
    branch: workspace.branch,
    // The rule, on every push: only the session's own branch; never its base or a protected one.
    baseBranch: workspace.baseBranch,
    protectedBranches: deps.protectedBranches ?? [],
    dataDir: deps.dataDir,
    log,
    signal,
  });
}
