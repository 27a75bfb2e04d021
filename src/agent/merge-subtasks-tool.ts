import { z } from 'zod';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { isPatchbayError } from '../core/errors.ts';
import { isTerminal } from '../core/session-status.ts';
import type { SubtaskLine } from '../core/subtasks.ts';
import type { Tool, ToolOutput } from './tool.ts';
import { type MergeOutcome, mergeIntoWorkspace, workspaceBlock } from './workspace-merge.ts';
import { conflictText, mergedText, refusedText, type Step, workspaceBlockText } from './merge-report.ts';

const MergeSubtasksInput = z.object({
  sessions: z
    .array(z.string().trim().min(1))
    .min(1)
    .optional()
    .describe(
      "Child session ids to merge, in this order. Omit to merge every ended sub-task of this session's repository.",
    ),
});
type MergeSubtasksInput = z.infer<typeof MergeSubtasksInput>;

/** A sub-task's pushed branch, brought into the workspace: the commit to merge. */
export type BroughtBranch = { branch: string; commit: string };

/**
 * What the tool needs from the rest of Patchbay. The children come from the session store; the
 * branches are fetched by the host (which holds the credentials) into the workspace: see
 * bringBranches in src/git/subtask-branches.ts, which throws 'not_found' for a branch the remote
 * does not have, before it changes anything.
 */
export type MergeSubtasksDeps = {
  children(parentId: string): Promise<SubtaskLine[]>;
  /** The session's repository, as its record has it. */
  repoOf(sessionId: string): Promise<string | undefined>;
  bringBranches(request: {
    sandbox: Sandbox;
    repo: string;
    branches: string[];
    signal: AbortSignal;
  }): Promise<BroughtBranch[]>;
};

/**
 * `merge_subtasks`: gathers the sub-tasks' branches of the parent session's repository into its
 * workspace, one merge commit each, in order. It stops at the first conflict and leaves it as git
 * leaves it; called again once the agent committed the resolution, it merges the rest (what HEAD
 * already contains counts as merged). A session without sub-tasks is told it has none.
 */
export function createMergeSubtasksTool(deps: MergeSubtasksDeps): Tool<MergeSubtasksInput> {
  return {
    name: 'merge_subtasks',
    description:
      "Merge your sub-tasks' branches (those on this session's repository) into your workspace, one merge commit each. " +
      'Lists what each merge brought. On a conflict it stops and leaves the conflict in the files for you to resolve: ' +
      'then `git add` the files, `git commit --no-edit`, and call merge_subtasks again to merge the rest. ' +
      'Sub-tasks on other repositories open their own pull requests and are not merged here.',
    inputSchema: MergeSubtasksInput,
    timeLimitMs: () => 30 * 60_000,
    execute: (input, ctx) => mergeSubtasks(deps, input, ctx.sessionId, ctx.sandbox, ctx.signal),
  };
}

async function mergeSubtasks(
  deps: MergeSubtasksDeps,
  input: MergeSubtasksInput,
  sessionId: string,
  sandbox: Sandbox,
  signal: AbortSignal,
): Promise<ToolOutput> {
  const repo = await deps.repoOf(sessionId);
  if (repo === undefined) return { content: `Session ${sessionId} was not found.`, isError: true };
  const children = await deps.children(sessionId);
  if (children.length === 0)
    return { content: 'This session has no sub-tasks to merge: spawn_subtasks starts them.', isError: true };
  const chosen = chooseChildren(children, repo, input.sessions);
  if ('error' in chosen) return { content: chosen.error, isError: true };
  if (chosen.lines.length === 0)
    return { content: `No completed sub-task of ${repo} pushed a branch to merge.${skippedText(chosen.skipped)}` };
  const block = await workspaceBlock(sandbox, signal);
  if (block) return { content: workspaceBlockText(block), isError: true };
  let brought: BroughtBranch[];
  try {
    brought = await deps.bringBranches({ sandbox, repo, branches: chosen.lines.map((l) => l.branch), signal });
  } catch (error) {
    if (isPatchbayError(error, 'not_found') || isPatchbayError(error, 'git_failed'))
      return { content: error.message, isError: true };
    throw error;
  }
  const commitOf = new Map(brought.map((b) => [b.branch, b.commit]));
  const steps: Step[] = [];
  for (const [i, line] of chosen.lines.entries()) {
    const commit = commitOf.get(line.branch);
    if (commit === undefined) return { content: `The branch ${line.branch} was not brought in.`, isError: true };
    const outcome: MergeOutcome = await mergeIntoWorkspace(sandbox, { commit, message: mergeMessage(line) }, signal);
    steps.push({ line, commit, outcome });
    if (outcome.kind === 'conflict' || outcome.kind === 'refused') {
      const rest = chosen.lines.slice(i + 1);
      const text = outcome.kind === 'conflict' ? conflictText(steps, outcome.files, rest) : refusedText(steps, rest);
      return { content: text + skippedText(chosen.skipped), isError: outcome.kind === 'refused' };
    }
  }
  return { content: mergedText(steps) + skippedText(chosen.skipped) };
}

type Mergeable = SubtaskLine & { branch: string };
type Chosen = { lines: Mergeable[]; skipped: SubtaskLine[] } | { error: string };

/**
 * The children to merge: the named ones (each must be a child on this repository with a branch,
 * and ended), or else every completed child on this repository that pushed a commit. Pure.
 */
function chooseChildren(children: SubtaskLine[], repo: string, named: string[] | undefined): Chosen {
  const ours = (line: SubtaskLine) => sameRepository(line.repo, repo);
  const ordered = [...children].sort((a, b) => a.index - b.index);
  if (named === undefined) {
    // A completed child with a commit pushed its branch; one without finished with nothing to merge.
    const lines = ordered.filter(
      (line): line is Mergeable =>
        ours(line) && line.status === 'completed' && line.branch !== null && line.commit !== undefined,
    );
    return { lines, skipped: ordered.filter((line) => ours(line) && !lines.includes(line as Mergeable)) };
  }
  const lines: Mergeable[] = [];
  for (const id of named) {
    const line = children.find((child) => child.sessionId === id);
    if (!line) return { error: `${id} is not a sub-task of this session. ${knownText(children)}` };
    if (!ours(line))
      return { error: `${describe(line)} is on ${line.repo}: it opens its own pull request and is not merged here.` };
    if (!isTerminal(line.status)) return { error: `${describe(line)} is still ${line.status}: wait until it ends.` };
    if (line.branch === null) return { error: `${describe(line)} has no branch (it ${line.status} without pushing).` };
    lines.push(line as Mergeable);
  }
  return { lines, skipped: [] };
}

/** The merge commit's message: which sub-task it brings, by title and branch. */
function mergeMessage(line: Mergeable): string {
  return `Merge sub-task ${line.index}: ${line.title}\n\nBranch ${line.branch} (session ${line.sessionId}).`;
}

function describe(line: SubtaskLine): string {
  return `Sub-task ${line.index} "${line.title}" (${line.sessionId})`;
}

function knownText(children: SubtaskLine[]): string {
  if (children.length === 0) return 'This session has no sub-tasks.';
  return `Its sub-tasks: ${children.map((c) => `${c.sessionId} (${c.index}. ${c.title})`).join(', ')}.`;
}

function skippedText(skipped: SubtaskLine[]): string {
  if (skipped.length === 0) return '';
  const lines = skipped.map((line) => `- ${describe(line)}: ${skipReason(line)}`);
  return `\n\nLeft out (name one in sessions to merge what it pushed anyway):\n${lines.join('\n')}`;
}

function skipReason(line: SubtaskLine): string {
  if (line.status === 'completed') return 'completed without pushing a commit (nothing to merge)';
  return `${line.status}${line.error ? ` (${line.error})` : ''}`;
}

/** Same repository whatever the spelling: case, a trailing slash or `.git`. */
function sameRepository(a: string, b: string): boolean {
  const norm = (text: string) =>
    text
      .trim()
      .replace(/\/+$/, '')
      .replace(/\.git$/i, '')
      .toLowerCase();
  return norm(a) === norm(b);
}
