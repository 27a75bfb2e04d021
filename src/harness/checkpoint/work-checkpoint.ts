import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import { takeBundle } from '../../git/take-bundle.ts';
import type { CheckpointStore, WorkCheckpoint } from './checkpoint-store.ts';

/** The workspace as a checkpoint sees it. */
export type WorkState = { head: string; tree: string; branch: string };

const bundleName = 'patchbay-checkpoint.bundle';
const identity = { GIT_AUTHOR_NAME: 'Patchbay', GIT_AUTHOR_EMAIL: 'checkpoint@patchbay.invalid', GIT_COMMITTER_NAME: 'Patchbay', GIT_COMMITTER_EMAIL: 'checkpoint@patchbay.invalid' };

// Runs in the sandbox (the workspace is the model's: git runs there, never on the host). The tree of
// everything in the worktree is written through a scratch index (a copy of the real one, so only
// changed files are hashed again), leaving the index, HEAD and files as they are. With
// PATCHBAY_BUNDLE=1 and a state other than PATCHBAY_LAST, a commit of that tree on top of HEAD is
// bundled against the base.
const stateScript = `set -eu
idx=.git/patchbay-checkpoint-index
rm -f "$idx" .git/${bundleName}
head=$(git rev-parse --verify --quiet 'HEAD^{commit}') || { echo "the workspace has no HEAD commit" >&2; exit 3; }
branch=$(git symbolic-ref --quiet --short HEAD || true)
if [ -f .git/index ]; then cp .git/index "$idx"; fi
GIT_INDEX_FILE="$idx" git add -A
tree=$(GIT_INDEX_FILE="$idx" git write-tree)
rm -f "$idx"
echo "head $head"
echo "tree $tree"
echo "branch $branch"
[ "\${PATCHBAY_BUNDLE:-0}" = 1 ] || exit 0
[ "$head $tree" != "\${PATCHBAY_LAST:-}" ] || { echo unchanged; exit 0; }
wip=$(git commit-tree "$tree" -p "$head" -m "Patchbay checkpoint")
git update-ref refs/patchbay/checkpoint "$wip"
if git merge-base --is-ancestor "$PATCHBAY_BASE" "$wip" 2>/dev/null; then
  git bundle create --quiet .git/${bundleName} refs/patchbay/checkpoint "^$PATCHBAY_BASE"
else
  git bundle create --quiet .git/${bundleName} refs/patchbay/checkpoint
fi
echo bundled
`;

// Puts the workspace where the checkpoint says: the session branch at its HEAD, the files of its
// tree (untracked files not in it are removed; ignored ones stay), the index at HEAD.
const restoreScript = `set -eu
b=.git/patchbay-restore.bundle
[ "\${PATCHBAY_PUT:-0}" = 1 ] || base64 -d > "$b"
git bundle verify --quiet "$b" >/dev/null 2>&1 || { echo "the checkpoint needs commits this workspace does not have (was the base branch rewritten?)" >&2; rm -f "$b"; exit 3; }
git fetch --quiet --no-tags --no-write-fetch-head "$b" "+refs/patchbay/checkpoint:refs/patchbay/checkpoint"
rm -f "$b"
wip=$(git rev-parse --verify 'refs/patchbay/checkpoint^{commit}')
[ "$(git rev-parse "$wip^{tree}")" = "$PATCHBAY_TREE" ] || { echo "the checkpoint's tree is not the one recorded" >&2; exit 3; }
git symbolic-ref HEAD "refs/heads/$PATCHBAY_BRANCH"
git reset --quiet --hard "$wip"
git clean -fdq
git reset --quiet "$PATCHBAY_HEAD"
`;

function parseState(stdout: string): WorkState {
  const field = (name: string) => new RegExp(`^${name} (.*)$`, 'm').exec(stdout)?.[1]?.trim() ?? '';
  const state = { head: field('head'), tree: field('tree'), branch: field('branch') };
  if (!/^[0-9a-f]{40,64}$/.test(state.head) || !/^[0-9a-f]{40,64}$/.test(state.tree)) {
    throw new PatchbayError('git_failed', `could not read the workspace state for a checkpoint: ${stdout.slice(0, 300)}`);
  }
  return state;
}

function failed(what: string, result: { exitCode: number | null; stderr: string; stdout: string }): PatchbayError {
  const detail = (result.stderr || result.stdout).trim().slice(-1000) || '(no output)';
  return new PatchbayError('git_failed', `${what} (exit ${result.exitCode ?? 'none'}): ${detail}`);
}

/** The workspace's HEAD, branch and the tree of its files, without changing anything. */
export async function readWorkState(sandbox: Sandbox, signal: AbortSignal): Promise<WorkState> {
  const result = await sandbox.exec(stateScript, { signal, timeoutMs: 10 * 60_000, env: identity });
  if (result.exitCode !== 0) throw failed('reading the workspace state failed', result);
  return parseState(result.stdout);
}

export type CheckpointOptions = {
  sessionId: string;
  sandbox: Sandbox;
  /** Host path of a local workspace, to copy the bundle out safely; without it the sandbox hands it over as bytes. */
  workspaceDir?: string;
  scratchDir: string;
  store: CheckpointStore;
  base: { branch: string; baseBranch: string; baseCommit: string };
  /** The session's log position now: checkpoints of one session are ordered by it. */
  step: number;
  /** The last checkpoint this run stored or restored: an unchanged workspace is not stored again. */
  last?: Pick<WorkCheckpoint, 'head' | 'tree'>;
  maxBytes: number;
  signal: AbortSignal;
};

/**
 * Stores the workspace's work as a checkpoint (into `store`; after a tool call the harness hands a
 * store that keeps it for the call's recorded result, so both land together), so the
 * transcript never says more was done than the checkpoint holds. A workspace that cannot be
 * checkpointed (too large a bundle, git failing in it) is recorded as such, so a resume elsewhere
 * fails with that reason instead of going on without the work. Returns what was stored.
 */
export async function checkpointWork(options: CheckpointOptions): Promise<Pick<WorkCheckpoint, 'head' | 'tree'>> {
  const { sandbox, signal } = options;
  const meta = { step: options.step, branch: options.base.branch, baseBranch: options.base.baseBranch, baseCommit: options.base.baseCommit };
  let state: WorkState;
  try {
    const result = await sandbox.exec(stateScript, {
      signal,
      timeoutMs: 10 * 60_000,
      env: { ...identity, PATCHBAY_BUNDLE: '1', PATCHBAY_BASE: options.base.baseCommit, PATCHBAY_LAST: options.last ? `${options.last.head} ${options.last.tree}` : '' },
    });
    if (result.exitCode !== 0) throw failed('git in the workspace failed', result);
    state = parseState(result.stdout);
    if (/^unchanged$/m.test(result.stdout)) return state;
  } catch (error) {
    if (signal.aborted) throw error;
    const reason = `the work could not be checkpointed: ${(error as Error).message}`;
    await options.store.save(options.sessionId, { ...meta, head: '', tree: '', bundle: null, unavailable: reason });
    return { head: '', tree: '' };
  }
  let copy: string | undefined;
  try {
    let bundle: Buffer;
    if (options.workspaceDir) {
      copy = await takeBundle({ workspaceDir: options.workspaceDir, scratchDir: options.scratchDir, maxBytes: options.maxBytes, name: bundleName });
      bundle = await readFile(copy);
    } else if (sandbox.getBytes) {
      bundle = Buffer.from(await sandbox.getBytes(`${sandbox.workdir}/.git/${bundleName}`, options.maxBytes));
    } else {
      throw new PatchbayError('git_failed', 'this sandbox can hand no files over');
    }
    await options.store.save(options.sessionId, { ...meta, head: state.head, tree: state.tree, bundle, ...(state.branch && { branch: state.branch }) });
  } catch (error) {
    if (signal.aborted) throw error;
    const reason = `the work could not be checkpointed: ${(error as Error).message}`;
    await options.store.save(options.sessionId, { ...meta, head: state.head, tree: state.tree, bundle: null, unavailable: reason });
  } finally {
    if (copy) await rm(copy, { force: true });
    await sandbox.exec(`rm -f .git/${bundleName}`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
  }
  return state;
}

/** Puts the checkpoint's work into the workspace. Throws when it cannot: the caller fails the run. */
export async function restoreWork(sandbox: Sandbox, checkpoint: WorkCheckpoint, signal: AbortSignal): Promise<void> {
  if (!checkpoint.bundle) {
    throw new PatchbayError('git_failed', `the previous run's work cannot be restored here: ${checkpoint.unavailable ?? 'its checkpoint has no bundle'}`);
  }
  // Remote sandboxes take bytes at a path; a local one reads them from the command's stdin.
  const put = sandbox.putBytes !== undefined;
  if (put) await sandbox.putBytes!(`${sandbox.workdir}/.git/patchbay-restore.bundle`, checkpoint.bundle);
  const result = await sandbox.exec(restoreScript, {
    signal,
    timeoutMs: 10 * 60_000,
    ...(!put && { stdin: checkpoint.bundle.toString('base64') }),
    env: { PATCHBAY_BRANCH: checkpoint.branch, PATCHBAY_HEAD: checkpoint.head, PATCHBAY_TREE: checkpoint.tree, PATCHBAY_PUT: put ? '1' : '0' },
  });
  if (result.exitCode !== 0) throw failed("restoring the previous run's work from its checkpoint failed", result);
}

/** Where copies of checkpoint bundles are made on the host. */
export const checkpointScratchDir = (dataDir: string) => join(dataDir, 'tmp');
