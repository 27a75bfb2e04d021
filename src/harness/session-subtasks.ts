import { randomUUID } from 'node:crypto';
import type { SubtaskSpawner } from '../agent/subtask-calls.ts';
import type { EventOf } from '../core/events.ts';
import type { Publisher } from '../core/publisher.ts';
import { parseRepoUrl, repoUrl } from '../core/repo-ref.ts';
import { isTerminal } from '../core/session-status.ts';
import type { NewChild, SubtaskLine, SubtaskSpec, SubtaskStore } from '../core/subtasks.ts';
import { branchDiff } from '../git/branch-diff.ts';
import { isValidBranchName } from '../git/branch-name.ts';
import { refusedEvents, refusedRepos } from './repo-authorization.ts';
import type { SessionRun } from './session-run.ts';

/** What the harness needs to fan a session out (HarnessDeps.subtasks). */
export type SubtaskDeps = {
  store: SubtaskStore;
  /** The git host URLs a sub-task's `repo` may name (GITHUB_GIT_URL): the one repository parser reads it. */
  repoBases: readonly string[];
};

/**
 * The run's spawner of sub-tasks, or undefined when this session is itself a sub-task
 * (depth 1) or the harness has no sub-task store. Each child works on its own branch, named after
 * the parent's (`<branch>-sub-<n>`); one on the parent's repository starts from the parent's base.
 */
export function subtaskSpawner(run: SessionRun): SubtaskSpawner | undefined {
  const subtasks = run.deps.subtasks;
  if (!subtasks || run.session.parentId) return undefined;
  return {
    async spawn(call, tasks) {
      const planned = planChildren(run, subtasks.repoBases, tasks);
      if ('refused' in planned) return { kind: 'refused', message: planned.refused };
      const refusal = await refuseRepos(run, call.id, planned.children);
      if (refusal) return { kind: 'refused', message: refusal };
      const spawned: EventOf<'subtasks-spawned'> = {
        type: 'subtasks-spawned',
        callId: call.id,
        children: planned.children.map(({ id, index, title, repo, branch }) => ({
          sessionId: id,
          index,
          title,
          repo,
          branch,
        })),
      };
      await subtasks.store.spawn(run.session.id, {
        callId: call.id,
        children: planned.children,
        events: [{ event: spawned, dedupeKey: `subtasks-spawned:${call.id}` }],
        epoch: run.deps.runEpoch,
      });
      run.log.info({ callId: call.id, children: planned.children.length }, 'sub-tasks spawned');
      return { kind: 'spawned' };
    },
    async standing(callId) {
      const children = await subtasks.store.children(run.session.id, callId);
      if (children.length === 0) return { kind: 'none' };
      if (!children.every((c) => isTerminal(c.status))) return { kind: 'running' };
      const reports = await Promise.all(children.map((c) => childReport(run, c)));
      return { kind: 'ended', content: reports.join('\n\n') };
    },
  };
}

/**
 * Every repository the agent named for a sub-task is checked against the requester's
 * own access before any child exists, so nothing is cloned, pushed or read there. A refusal
 * starts none of the call's sub-tasks; the threads hear which repository was refused and why
 * (`repo-refused`), and the agent gets the same as its call's result.
 */
async function refuseRepos(run: SessionRun, callId: string, children: NewChild[]): Promise<string | undefined> {
  const named = children.map((c) => c.repo).filter((repo) => repo !== run.session.repo);
  const refused = await refusedRepos(run.session, named, run.deps, run.signal);
  if (refused.length === 0) return undefined;
  await run.deps.store.commitStep(run.session.id, { events: refusedEvents(refused, callId) });
  run.log.warn({ callId, refused: refused.map((r) => r.repo) }, 'sub-task repositories refused');
  const lines = refused.map(({ repo, reason }) => {
    const indexes = children.filter((c) => c.repo === repo).map((c) => c.index);
    return `Sub-task ${indexes.join(', ')} names ${repo}, which I may not work on: ${reason}.`;
  });
  return `${lines.join('\n')}\nNo sub-task was started and nothing was cloned there. Leave that repository out (tell the person it needs someone with write access there), or do the work in this repository.`;
}

/** The children a call asks for, or why none is started: a repository that is not one. */
function planChildren(
  run: SessionRun,
  bases: readonly string[],
  tasks: SubtaskSpec[],
): { children: NewChild[] } | { refused: string } {
  const { session, workspace } = run;
  const children: NewChild[] = [];
  for (const [i, task] of tasks.entries()) {
    const index = i + 1;
    const repo = task.repo === undefined ? session.repo : childRepo(task.repo, session.repo, bases);
    if (!repo)
      return {
        refused: `Sub-task ${index} names ${JSON.stringify(task.repo)}, which is not a repository URL on ${bases.join(' or ')} (write it as ${bases[0]}/owner/repo). No sub-task was started.`,
      };
    const branch = `${workspace.branch}-sub-${index}`;
    if (!isValidBranchName(branch))
      return { refused: `${branch} is not a valid branch name. No sub-task was started.` };
    const sameRepo = repo === session.repo;
    children.push({
      id: randomUUID(),
      index,
      title: task.title,
      repo,
      prompt: task.prompt,
      branch,
      ...(sameRepo && { baseBranch: workspace.baseBranch }),
    });
  }
  return { children };
}

/** The session's repo string for a sub-task's `repo`: the parent's own, or a URL on one of the git hosts. */
function childRepo(text: string, parentRepo: string, bases: readonly string[]): string | undefined {
  if (text.trim() === parentRepo) return parentRepo;
  for (const base of bases) {
    const ref = parseRepoUrl(text, base);
    if (ref) return repoUrl(base, ref);
  }
  return undefined;
}

/** How one child went, for the parent's model: status, branch, commit, files, checks, final message or error. */
async function childReport(run: SessionRun, child: SubtaskLine): Promise<string> {
  const { store } = run.deps;
  const record = await store.get(child.sessionId);
  const events = await store.events(child.sessionId, { types: ['workspace-ready', 'check-finished'] });
  const lines = [`Sub-task ${child.index} "${child.title}" (${child.repo}): ${child.status}`];
  lines.push(`branch: ${child.branch ?? 'none'}${child.commit ? `, commit ${child.commit}` : ', no commit'}`);
  if (child.prUrl) lines.push(`pull request: ${child.prUrl}`);
  const files = await changedFiles(run, child, events);
  if (files) lines.push(`changed files: ${files}`);
  const checks = events
    .map((e) => e.event)
    .filter((e): e is EventOf<'check-finished'> => e.type === 'check-finished' && e.commit === child.commit)
    .map((e) => `${e.name} ${e.outcome}`);
  if (checks.length) lines.push(`checks on its commit: ${checks.join(', ')}`);
  if (child.status === 'completed') lines.push(`final message: ${record?.result?.summary?.trim() || '(none)'}`);
  else lines.push(`error: ${child.error ?? `it ended ${child.status} without a reason`}`);
  return lines.join('\n');
}

/** `path (+added -deleted)` per file between the child's base and its commit, from the host's mirror. */
async function changedFiles(
  run: SessionRun,
  child: SubtaskLine,
  events: { event: { type: string } }[],
): Promise<string | undefined> {
  const ready = events.map((e) => e.event).find((e): e is EventOf<'workspace-ready'> => e.type === 'workspace-ready');
  if (!ready || !child.commit) return undefined;
  const diff = await branchDiff({
    repo: child.repo,
    dataDir: run.deps.dataDir,
    base: ready.baseCommit,
    head: child.commit,
    signal: run.signal,
  });
  if (!diff) return 'not available (the commits are not in the mirror)';
  return diff.files.map((f) => `${f.path} (+${f.additions} -${f.deletions})`).join(', ') || 'none';
}

/** A sub-task on its parent's repository pushes its branch but opens no pull request: the parent gathers it. */
export async function publishersOf(run: SessionRun): Promise<readonly Publisher[]> {
  const all = run.deps.publishers ?? [];
  if (!run.session.parentId) return all;
  const parent = await run.deps.store.get(run.session.parentId);
  return parent?.repo === run.session.repo ? [] : all;
}
