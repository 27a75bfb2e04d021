import type { GateDecision } from '../core/evidence.ts';
import { publishedGate } from '../core/evidence.ts';
import {
  firstGitEnv,
  type PreOpenCheck,
  type PublishedPullRequest,
  type PublishInput,
  type Publisher,
} from '../core/publisher.ts';
import type { SourcedRule } from '../core/repository-scout.ts';
import { effectiveKnowledge, type KnowledgeStore } from './knowledge/knowledge-store.ts';
import { knowledgeKey } from './knowledge/load-knowledge.ts';
import { pushBranch, type PushBranchResult } from '../git/push-branch.ts';
import type { SessionRun } from './session-run.ts';
import { publishedDecision, type Committed } from './ship-changes.ts';
import { publishersOf } from './session-subtasks.ts';

/** Pushes the session branch and opens or updates its pull request with the gate's decision. */
export async function pushAndPublish(
  run: SessionRun,
  summary: string,
  committed: Committed,
  gate: GateDecision | undefined,
): Promise<{ commit?: string; prUrl?: string; decision?: GateDecision; notes: string[] }> {
  const { session, deps, workspace, signal, log } = run;
  const { store } = deps;
  const publishers = await publishersOf(run);
  const rules = await scoutedRules(deps.gates?.knowledge, session.repo);
  const pushed = await pushWork(run);
  await store.commitStep(session.id, {
    events: [
      {
        event: { type: 'diff-updated', stat: committed.stat, filesChanged: committed.filesChanged },
        dedupeKey: `diff:${pushed.commit}`,
      },
      {
        event: { type: 'branch-pushed', branch: workspace.branch, commit: pushed.commit, remote: pushed.remote },
        dedupeKey: `pushed:${pushed.commit}`,
      },
    ],
  });
  const decision = publishedDecision(gate, pushed.commit, log);
  const current = (await store.get(session.id)) ?? session;
  let pr: PublishedPullRequest | undefined;
  const input: PublishInput = {
    session: current,
    branch: workspace.branch,
    baseBranch: workspace.baseBranch,
    commit: pushed.commit,
    summary,
    signal,
    ...(decision && { gate: decision }),
    ...(rules && { rules }),
  };
  const before = await checkBeforeOpening(publishers, input);
  if (before.hold) log.info({ reason: before.hold }, 'no pull request opened: the repository would close it');
  // Said in the thread before the pull request opens, not only in the final reply with its link.
  if (before.notes.length > 0)
    await store.commitStep(session.id, {
      events: before.notes.map((text, i) => ({
        event: { type: 'publish-notice' as const, text },
        dedupeKey: `publish-notice:${pushed.commit}:${i}`,
      })),
    });
  for (const publisher of before.hold ? [] : publishers) {
    await store.assertCurrent?.(session.id);
    pr ??= await publisher.publish(input);
  }
  const notes = before.hold ? [before.hold] : [];
  if (pr) {
    await store.commitStep(session.id, {
      events: [
        {
          event: { type: 'pr-opened', url: pr.url, number: pr.number, branch: workspace.branch, commit: pushed.commit },
          dedupeKey: `pr:${pushed.commit}`,
        },
      ],
    });
  }
  if (decision) {
    await store.commitStep(session.id, {
      events: [{ event: { type: 'review-gate', ...publishedGate(decision, pr !== undefined) } }],
    });
  }
  return { commit: pushed.commit, ...(pr && { prUrl: pr.url }), ...(decision && { decision }), notes };
}

/** Pushes the session's branch from the sandbox, only while this run holds the session. */
async function pushWork(run: SessionRun): Promise<PushBranchResult> {
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

/** The scout's rules as the repository's document has them now (a person's edit included). */
async function scoutedRules(
  knowledge: KnowledgeStore | undefined,
  repo: string,
): Promise<readonly SourcedRule[] | undefined> {
  const stored = knowledge && (await knowledge.get(knowledgeKey(repo)));
  return stored && effectiveKnowledge(stored).scouted?.rules;
}

/** Every publisher's word before a pull request opens: the first hold, and all their notes. */
async function checkBeforeOpening(publishers: readonly Publisher[], input: PublishInput): Promise<PreOpenCheck> {
  let hold: string | undefined;
  const notes: string[] = [];
  for (const publisher of publishers) {
    const said = await publisher.checkBeforeOpen?.(input);
    hold ??= said?.hold;
    notes.push(...(said?.notes ?? []));
  }
  return { ...(hold && { hold }), notes };
}
