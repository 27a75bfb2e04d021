import type { ExecResult, Sandbox } from '../../sandbox/sandbox.ts';
import { PatchbayError } from '../core/errors.ts';

/** One file a merge brought, with its line counts (0 and 0 for a binary file). */
export type MergedFile = { path: string; additions: number; deletions: number };

/** What merging one commit into the workspace's HEAD did. */
export type MergeOutcome =
  | { kind: 'merged'; commit: string; files: MergedFile[] }
  | { kind: 'already-merged' }
  | { kind: 'conflict'; files: string[] }
  | { kind: 'refused'; reason: string };

/** Why the workspace cannot take a merge now, if so: a merge left open, or uncommitted changes. */
export type WorkspaceBlock = { kind: 'merge-open'; conflicted: string[] } | { kind: 'dirty'; files: string[] };

const GIT_ENV = { GIT_PAGER: 'cat', PAGER: 'cat', GIT_TERMINAL_PROMPT: '0' };

/** Who records the merge commits Patchbay makes for the agent. */
const MERGER = {
  GIT_AUTHOR_NAME: 'Patchbay',
  GIT_AUTHOR_EMAIL: 'patchbay@users.noreply.github.com',
  GIT_COMMITTER_NAME: 'Patchbay',
  GIT_COMMITTER_EMAIL: 'patchbay@users.noreply.github.com',
};

// Hooks and signing off, as for the harness's own commits: the merge is Patchbay's, not the model's.
const git = 'git -c core.hooksPath=/dev/null -c commit.gpgSign=false -c core.fsmonitor=false';

// Exit 10: nothing to do. 0: merged. 11: git stopped with the merge open (conflicts). Else git's own
// refusal, with its words on stderr. After a conflict the workspace gets a committer identity (when it
// has none) so the agent's own `git commit` of the resolution works.
const mergeScript = `set -u
if git merge-base --is-ancestor "$PATCHBAY_COMMIT" HEAD; then exit 10; fi
${git} merge --quiet --no-ff --no-edit -m "$PATCHBAY_MESSAGE" "$PATCHBAY_COMMIT" >&2
code=$?
[ "$code" = 0 ] && { git rev-parse HEAD; exit 0; }
if git rev-parse -q --verify MERGE_HEAD >/dev/null; then
  git config user.email >/dev/null || git config user.email "$GIT_COMMITTER_EMAIL"
  git config user.name >/dev/null || git config user.name "$GIT_COMMITTER_NAME"
  exit 11
fi
exit "$code"
`;

/**
 * Merges `commit` into the workspace's HEAD inside the sandbox with a merge commit (`--no-ff`, so
 * each sub-task stays one commit to read or revert). A conflict is left exactly as git leaves it
 * (markers in the files, MERGE_HEAD set) for the agent to resolve. A commit HEAD already contains
 * is reported as merged before, so calling again after a resolved conflict merges only the rest.
 */
export async function mergeIntoWorkspace(
  sandbox: Sandbox,
  merge: { commit: string; message: string },
  signal: AbortSignal,
): Promise<MergeOutcome> {
  const result = await sandbox.exec(mergeScript, {
    signal,
    timeoutMs: 10 * 60_000,
    env: { ...GIT_ENV, ...MERGER, PATCHBAY_COMMIT: merge.commit, PATCHBAY_MESSAGE: merge.message },
  });
  if (result.aborted) throw new PatchbayError('aborted', 'The merge was aborted');
  switch (result.exitCode) {
    case 0: {
      const commit = result.stdout.trim();
      if (!/^[0-9a-f]{40,64}$/.test(commit))
        throw new PatchbayError('git_failed', `the merge gave no commit id: ${commit.slice(0, 200)}`);
      return { kind: 'merged', commit, files: await filesOf(sandbox, `${commit}^1`, commit, signal) };
    }
    case 10:
      return { kind: 'already-merged' };
    case 11:
      return { kind: 'conflict', files: await conflictedFiles(sandbox, signal) };
    default:
      return { kind: 'refused', reason: tail(result) };
  }
}

/** Whether a merge may start: none left open, and no uncommitted changes to tracked files. */
export async function workspaceBlock(sandbox: Sandbox, signal: AbortSignal): Promise<WorkspaceBlock | undefined> {
  const open = await run(sandbox, 'git rev-parse -q --verify MERGE_HEAD || true', signal);
  if (open.trim() !== '') return { kind: 'merge-open', conflicted: await conflictedFiles(sandbox, signal) };
  const status = await run(sandbox, 'git status --porcelain=v1 -z --untracked-files=no', signal);
  const files = status
    .split('\0')
    .filter(Boolean)
    .map((entry) => entry.slice(3));
  return files.length > 0 ? { kind: 'dirty', files } : undefined;
}

/** Files git marked unmerged, as `git diff --diff-filter=U` lists them. */
async function conflictedFiles(sandbox: Sandbox, signal: AbortSignal): Promise<string[]> {
  const out = await run(sandbox, 'git diff --name-only --diff-filter=U -z', signal);
  return [...new Set(out.split('\0').filter(Boolean))];
}

async function filesOf(sandbox: Sandbox, from: string, to: string, signal: AbortSignal): Promise<MergedFile[]> {
  const out = await run(sandbox, `git diff --no-color --no-ext-diff --no-renames --numstat -z ${from} ${to}`, signal);
  return out
    .split('\0')
    .filter(Boolean)
    .map((entry) => {
      const [add = '0', del = '0', ...rest] = entry.split('\t');
      return {
        path: rest.join('\t'),
        additions: add === '-' ? 0 : Number(add),
        deletions: del === '-' ? 0 : Number(del),
      };
    });
}

async function run(sandbox: Sandbox, command: string, signal: AbortSignal): Promise<string> {
  const result = await sandbox.exec(command, { signal, timeoutMs: 60_000, env: GIT_ENV });
  if (result.aborted) throw new PatchbayError('aborted', `${command} was aborted`);
  if (result.exitCode !== 0) throw new PatchbayError('git_failed', `${command} failed: ${tail(result)}`);
  return result.stdout;
}

function tail(result: ExecResult): string {
  return (result.stderr || result.stdout).trim().slice(-2000) || `exit ${result.exitCode ?? 'none'}`;
}
