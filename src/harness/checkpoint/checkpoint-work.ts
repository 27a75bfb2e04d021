import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import { takeBundle } from '../../git/take-bundle.ts';
import type { CheckpointStore, WorkCheckpoint } from './checkpoint-store.ts';

/** The workspace as a checkpoint sees it. */
export type WorkState = { head: string; tree: string; branch: string };

const bundleName = 'patchbay-checkpoint.bundle';
const identity = {
  GIT_AUTHOR_NAME: 'Patchbay',
  GIT_AUTHOR_EMAIL: 'checkpoint@patchbay.invalid',
  GIT_COMMITTER_NAME: 'Patchbay',
  GIT_COMMITTER_EMAIL: 'checkpoint@patchbay.invalid',
};

// Runs in the sandbox (the workspace is the model's: git runs there, never on the host). The tree of
// everything in the worktree is written through a scratch index (a copy of the real one, so only
// changed files are hashed again), leaving the index, HEAD and files as they are. With
// PATCHBAY_BUNDLE=1 and a state other than PATCHBAY_LAST, a checkpoint commit of that tree on top of
// HEAD is bundled. With PATCHBAY_PARENT (the stored chain's last checkpoint commit, when this
// workspace has it) the commit also descends from it and the bundle is an increment against it,
// holding only what changed since; otherwise the bundle holds everything since the base.
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
parent=\${PATCHBAY_PARENT:-}
if [ -n "$parent" ] && ! git cat-file -e "$parent^{commit}" 2>/dev/null; then parent=; fi
if [ -n "$parent" ]; then
  wip=$(git commit-tree "$tree" -p "$head" -p "$parent" -m "Patchbay checkpoint")
else
  wip=$(git commit-tree "$tree" -p "$head" -m "Patchbay checkpoint")
fi
git update-ref refs/patchbay/checkpoint "$wip"
if [ -n "$parent" ]; then
  git bundle create --quiet .git/${bundleName} refs/patchbay/checkpoint "^$parent"
  echo "bundled increment $wip"
elif git merge-base --is-ancestor "$PATCHBAY_BASE" "$wip" 2>/dev/null; then
  git bundle create --quiet .git/${bundleName} refs/patchbay/checkpoint "^$PATCHBAY_BASE"
  echo "bundled full $wip"
else
  git bundle create --quiet .git/${bundleName} refs/patchbay/checkpoint
  echo "bundled full $wip"
fi
`;

// Puts the workspace where the checkpoint says: the session branch at its HEAD, the files of its
// tree (untracked files not in it are removed; ignored ones stay), the index at HEAD. The chain's
// bundles are fetched in order (each needs the commits of the one before), from files the host put
// in .git/patchbay-restore or from stdin, one base64 line per bundle.
const restoreDir = '.git/patchbay-restore';
const restoreScript = `set -eu
d=${restoreDir}
if [ "\${PATCHBAY_PUT:-0}" != 1 ]; then
  rm -rf "$d"; mkdir -p "$d"; cat > "$d/all"
  (cd "$d" && split -l 1 -a 5 -d all line- && rm all && for f in line-*; do base64 -d "$f" > "part-\${f#line-}.bundle"; rm "$f"; done)
fi
for b in "$d"/part-*.bundle; do
  git bundle verify --quiet "$b" >/dev/null 2>&1 || { echo "the checkpoint needs commits this workspace does not have (was the base branch rewritten?)" >&2; rm -rf "$d"; exit 3; }
  git fetch --quiet --no-tags --no-write-fetch-head "$b" "+refs/patchbay/checkpoint:refs/patchbay/checkpoint"
done
rm -rf "$d"
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
    throw new PatchbayError(
      'git_failed',
      `could not read the workspace state for a checkpoint: ${stdout.slice(0, 300)}`,
    );
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

/** Where a session's checkpoint chain stands, as this run last stored or restored it. */
export type CheckpointChain = { wip: string; increments: number; incrementBytes: number; baseBytes: number };

/**
 * When the next checkpoint is stored whole instead (a compaction): once the increments weigh as
 * much as the bundle they follow (after a few, so early small steps do not compact every time), or
 * are many (a restore fetches each). Compacting at a size proportional to the chain keeps the
 * average cost of a step near what it changed, and a restore's chain short.
 */
const MIN_INCREMENTS_TO_COMPACT = 32;
const MAX_INCREMENTS = 64;
export function compactionDue(chain: CheckpointChain): boolean {
  return (
    chain.increments >= MAX_INCREMENTS ||
    (chain.increments >= MIN_INCREMENTS_TO_COMPACT && chain.incrementBytes >= chain.baseBytes)
  );
}

/** The chain a restored (or matching) checkpoint ends, for the run's next increment; none for a checkpoint stored before chains. */
export function chainOf(checkpoint: WorkCheckpoint): CheckpointChain | undefined {
  if (!checkpoint.wip || !checkpoint.bundle) return undefined;
  const increments = checkpoint.increments ?? [];
  return {
    wip: checkpoint.wip,
    increments: increments.length,
    incrementBytes: increments.reduce((sum, part) => sum + part.length, 0),
    baseBytes: checkpoint.bundle.length,
  };
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
  last?: Pick<WorkCheckpoint, 'head' | 'tree'> | undefined;
  /** The stored chain this workspace continues: the checkpoint is stored as an increment on it unless a compaction is due. */
  chain?: CheckpointChain | undefined;
  maxBytes: number;
  signal: AbortSignal;
};

export type CheckpointResult = Pick<WorkCheckpoint, 'head' | 'tree'> & { chain?: CheckpointChain };

/**
 * Stores the workspace's work as a checkpoint (into `store`; after a tool call the harness hands a
 * store that keeps it for the call's recorded result, so both land together), so the transcript
 * never says more was done than the checkpoint holds: an increment on the stored chain when the
 * workspace continues it, else the whole work since the base. A workspace that cannot be
 * checkpointed (too large a bundle, git failing in it) is recorded as such, so a resume elsewhere
 * fails with that reason instead of going on without the work. Returns what was stored.
 */
export async function checkpointWork(options: CheckpointOptions): Promise<CheckpointResult> {
  const { sandbox, signal } = options;
  const meta = {
    step: options.step,
    branch: options.base.branch,
    baseBranch: options.base.baseBranch,
    baseCommit: options.base.baseCommit,
  };
  const parent = options.chain && !compactionDue(options.chain) ? options.chain.wip : undefined;
  let work: { state: WorkState; bundled?: Bundled };
  try {
    work = await bundleWork(options, parent);
  } catch (error) {
    if (signal.aborted) throw error;
    const reason = `the work could not be checkpointed: ${(error as Error).message}`;
    await options.store.save(options.sessionId, { ...meta, head: '', tree: '', bundle: null, unavailable: reason });
    return { head: '', tree: '' };
  }
  const { state, bundled } = work;
  if (!bundled) return { ...state, ...(options.chain && { chain: options.chain }) };
  const stored = {
    ...meta,
    head: state.head,
    tree: state.tree,
    wip: bundled.wip,
    ...(state.branch && { branch: state.branch }),
  };
  try {
    const bundle = await readBundle(options);
    if (bundled.kind === 'increment' && parent && options.chain) {
      if (await options.store.append(options.sessionId, stored, { parent, bundle })) {
        const chain = options.chain;
        return {
          ...state,
          chain: {
            wip: bundled.wip,
            increments: chain.increments + 1,
            incrementBytes: chain.incrementBytes + bundle.length,
            baseBytes: chain.baseBytes,
          },
        };
      }
      // The stored chain is not the one this workspace continues (another run stored since): start a new one.
      return await checkpointWork({ ...options, chain: undefined, last: undefined });
    }
    await options.store.save(options.sessionId, { ...stored, bundle });
    return { ...state, chain: { wip: bundled.wip, increments: 0, incrementBytes: 0, baseBytes: bundle.length } };
  } catch (error) {
    if (signal.aborted) throw error;
    const reason = `the work could not be checkpointed: ${(error as Error).message}`;
    await options.store.save(options.sessionId, {
      ...meta,
      head: state.head,
      tree: state.tree,
      bundle: null,
      unavailable: reason,
    });
    return state;
  } finally {
    await sandbox.exec(`rm -f .git/${bundleName}`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
  }
}

/** What the sandbox bundled: an increment on the stored chain or the whole work, and its wip commit. */
type Bundled = { kind: string; wip: string };

/**
 * The workspace's state, and unless it is unchanged since `options.last` a bundle of its work left
 * in `.git` (an increment on `parent` when given, else all since the base). Throws when git fails.
 */
async function bundleWork(
  options: CheckpointOptions,
  parent: string | undefined,
): Promise<{ state: WorkState; bundled?: Bundled }> {
  const result = await options.sandbox.exec(stateScript, {
    signal: options.signal,
    timeoutMs: 10 * 60_000,
    env: {
      ...identity,
      PATCHBAY_BUNDLE: '1',
      PATCHBAY_BASE: options.base.baseCommit,
      PATCHBAY_PARENT: parent ?? '',
      PATCHBAY_LAST: options.last ? `${options.last.head} ${options.last.tree}` : '',
    },
  });
  if (result.exitCode !== 0) throw failed('git in the workspace failed', result);
  const state = parseState(result.stdout);
  if (/^unchanged$/m.test(result.stdout)) return { state };
  const match = /^bundled (increment|full) ([0-9a-f]{40,64})$/m.exec(result.stdout);
  if (!match) throw failed('the checkpoint bundle was not made', result);
  return { state, bundled: { kind: match[1]!, wip: match[2]! } };
}

/** The bundle's bytes: copied out of a local workspace safely (the copy removed after), else handed over by the sandbox. */
async function readBundle(options: CheckpointOptions): Promise<Buffer> {
  if (options.workspaceDir) {
    let copy: string | undefined;
    try {
      copy = await takeBundle({
        workspaceDir: options.workspaceDir,
        scratchDir: options.scratchDir,
        maxBytes: options.maxBytes,
        name: bundleName,
      });
      return await readFile(copy);
    } finally {
      if (copy) await rm(copy, { force: true });
    }
  }
  if (options.sandbox.getBytes) return bundleFromSandbox(options.sandbox, options.maxBytes);
  throw new PatchbayError('git_failed', 'this sandbox can hand no files over');
}

/**
 * The bundle from a sandbox the host cannot see into. A transfer that broke (a stream cut, bytes
 * short of what the sandbox said it holds) is tried once more while the file is still there, so a
 * passing fault does not record the work as lost.
 */
async function bundleFromSandbox(sandbox: Sandbox, maxBytes: number): Promise<Buffer> {
  const path = `${sandbox.workdir}/.git/${bundleName}`;
  try {
    return Buffer.from(await sandbox.getBytes!(path, maxBytes));
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'sandbox_failed') throw error;
    return Buffer.from(await sandbox.getBytes!(path, maxBytes));
  }
}

/** Puts the checkpoint's work (its bundle, then each increment) into the workspace. Throws when it cannot: the caller fails the run. */
export async function restoreWork(sandbox: Sandbox, checkpoint: WorkCheckpoint, signal: AbortSignal): Promise<void> {
  if (!checkpoint.bundle) {
    throw new PatchbayError(
      'git_failed',
      `the previous run's work cannot be restored here: ${checkpoint.unavailable ?? 'its checkpoint has no bundle'}`,
    );
  }
  const parts = [checkpoint.bundle, ...(checkpoint.increments ?? [])];
  // Remote sandboxes take bytes at a path; a local one reads them from the command's stdin.
  const put = sandbox.putBytes !== undefined;
  if (put) {
    const cleared = await sandbox.exec(`rm -rf ${restoreDir}`, { signal, timeoutMs: 60_000 });
    if (cleared.exitCode !== 0) throw failed('clearing an earlier restore failed', cleared);
    for (const [i, part] of parts.entries())
      await sandbox.putBytes!(`${sandbox.workdir}/${restoreDir}/part-${String(i).padStart(5, '0')}.bundle`, part);
  }
  const result = await sandbox.exec(restoreScript, {
    signal,
    timeoutMs: 10 * 60_000,
    ...(!put && { stdin: `${parts.map((part) => part.toString('base64')).join('\n')}\n` }),
    env: {
      PATCHBAY_BRANCH: checkpoint.branch,
      PATCHBAY_HEAD: checkpoint.head,
      PATCHBAY_TREE: checkpoint.tree,
      PATCHBAY_PUT: put ? '1' : '0',
    },
  });
  if (result.exitCode !== 0) throw failed("restoring the previous run's work from its checkpoint failed", result);
}

/** Where copies of checkpoint bundles are made on the host. */
export const checkpointScratchDir = (dataDir: string) => join(dataDir, 'tmp');
