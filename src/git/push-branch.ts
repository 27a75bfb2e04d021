import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { PatchbayError, isPatchbayError } from '../core/errors.ts';
import { assertValidBranchName } from './branch-name.ts';
import {
  defaultBranch,
  describeRepo,
  ensureMirror,
  mirrorGitConfig,
  mirrorPath,
  resolveBranch,
  resolveRepo,
  withMirrorLock,
} from './mirror.ts';
import type { Mirror } from './mirror.ts';
import { runHostGit } from './host-git.ts';
import { runRemoteGit } from './remote-git.ts';
import { explainPushRefusal } from './push-refusals.ts';
import { takeBundle, takeBundleFromSandbox, workspaceBundlePath } from './take-bundle.ts';

export type PushBranchOptions = {
  sandbox: Sandbox;
  /** Host path of the sandbox's workspace (the repository root); absent for a remote sandbox. */
  workspaceDir?: string;
  repo: string;
  branch: string;
  dataDir: string;
  log: Logger;
  signal: AbortSignal;
  /** The branch the session started from: never pushed to, and its commits stay out of the bundle. */
  baseBranch?: string;
  /**
   * Never pushed to, on top of main, master, the base and the repository's default branch. A `*`
   * matches any run of characters (`release/*`).
   */
  protectedBranches?: string[];
  /** Extra environment for the network git calls (credentials). */
  env?: Record<string, string>;
  /** Largest bundle accepted from the sandbox. Default 2 GiB. */
  maxBundleBytes?: number;
};

export type PushBranchResult = { commit: string; remote: string };

const defaultMaxBundleBytes = 2 * 1024 ** 3;

// Runs in the sandbox. Commits the mirror already has are left out of the bundle when the workspace
// has them too; one the branch tip does not descend past is kept out of the exclusions, so the
// bundle is never empty.
const bundleScript = `set -eu
rm -f ${workspaceBundlePath}
tip=$(git rev-parse --verify --quiet "refs/heads/$PATCHBAY_BRANCH^{commit}") || {
  echo "branch $PATCHBAY_BRANCH does not exist in the workspace" >&2
  exit 3
}
set --
for c in $PATCHBAY_HAVE; do
  if git cat-file -e "$c^{commit}" 2>/dev/null && ! git merge-base --is-ancestor "$tip" "$c"; then
    set -- "$@" "^$c"
  fi
done
git bundle create --quiet ${workspaceBundlePath} "refs/heads/$PATCHBAY_BRANCH" "$@"
`;

/**
 * Pushes the session branch from an untrusted workspace without running git in it on the host (its
 * .git/config could name hooks, an fsmonitor or an ssh command). The sandbox bundles the branch; the
 * host copies the bundle out, fetches it into the mirror (fast-forward only) and pushes that one
 * branch from the mirror, never forced. Protected branches are refused.
 */
export async function pushBranch(options: PushBranchOptions): Promise<PushBranchResult> {
  const { branch, log, signal } = options;
  assertValidBranchName(branch);
  if (options.baseBranch !== undefined) assertValidBranchName(options.baseBranch, 'base branch');
  const gitDir = mirrorPath(options.dataDir, resolveRepo(options.repo));
  const refuseProtected = (why: string): never => {
    throw new PatchbayError(
      'invalid_input',
      `Refusing to push to protected branch ${branch}: ${why}. Patchbay pushes only a session's own branch.`,
    );
  };
  if (branch === 'main' || branch === 'master') refuseProtected('main and master are always protected');
  if (branch === options.baseBranch) refuseProtected(`it is the session's base branch`);
  const rule = (options.protectedBranches ?? []).find((pattern) => matchesBranchPattern(branch, pattern));
  if (rule !== undefined) refuseProtected(`it matches PROTECTED_BRANCHES entry ${rule}`);
  return withMirrorLock(gitDir, async () => {
    // updateHead: the default branch is protected even when the remote switched it lately.
    const mirror = await ensureMirror(options.repo, { ...options, updateHead: true });
    const headBranch = await defaultBranch(mirror, signal);
    if (headBranch === branch) refuseProtected(`it is the repository's default branch`);

    const known = [branch, options.baseBranch, headBranch].filter((b): b is string => b !== undefined);
    const have = await commitsTheMirrorHas(mirror, known, signal);
    await createBundleInSandbox(options, have);
    let copy: string | undefined;
    try {
      const scratchDir = join(options.dataDir, 'tmp');
      const maxBytes = options.maxBundleBytes ?? defaultMaxBundleBytes;
      copy = options.workspaceDir
        ? await takeBundle({ workspaceDir: options.workspaceDir, scratchDir, maxBytes })
        : await takeBundleFromSandbox({ sandbox: options.sandbox, scratchDir, maxBytes });
      const previous = await resolveBranch(mirror, branch, signal);
      const ref = `refs/heads/${branch}`;
      // Not forced: git refuses a bundle whose branch does not fast-forward the remote's.
      await runHostGit(['fetch', '--no-tags', '--no-write-fetch-head', '--no-progress', copy, `${ref}:${ref}`], {
        gitDir: mirror.gitDir,
        signal,
        config: { ...mirrorGitConfig, 'transfer.fsckObjects': 'true' },
      }).catch((error: unknown) => {
        if (isPatchbayError(error, 'git_failed') && /non-fast-forward|\(rejected\)|\[rejected\]/.test(error.message)) {
          throw new PatchbayError(
            'git_failed',
            `Refusing to push ${branch}: it does not fast-forward the remote branch (history was rewritten, or someone else pushed to it)`,
            { cause: error },
          );
        }
        throw error;
      });
      let commit: string | undefined;
      try {
        commit = await resolveBranch(mirror, branch, signal);
        if (commit === undefined) throw new PatchbayError('git_failed', `The bundle's ${ref} is not a commit`);
        await pushToOrigin(mirror, ref, commit, options);
      } catch (error) {
        await restoreRef(mirror, ref, previous);
        throw (isPatchbayError(error, 'git_failed') && explainPushRefusal(error.message, branch, error)) || error;
      }
      const remote = describeRepo(mirror.source);
      log.info({ branch, commit, remote }, 'branch pushed');
      return { commit, remote };
    } finally {
      if (copy) await rm(copy, { force: true });
      await options.sandbox
        .exec(`rm -f ${workspaceBundlePath}`, { signal: AbortSignal.timeout(30_000) })
        .catch(() => undefined);
    }
  });
}

/**
 * Pushes the mirror's branch to the remote. A push whose answer was lost can have landed: the git
 * host updated the ref and the connection dropped before it said so (and curl, sending the request
 * again by itself, got "reference already exists"). Whatever the failure, a remote branch that now
 * holds exactly this commit is the push done, never pushed again.
 */
async function pushToOrigin(mirror: Mirror, ref: string, commit: string, options: PushBranchOptions): Promise<void> {
  const remote = { gitDir: mirror.gitDir, signal: options.signal, env: options.env, config: mirrorGitConfig };
  try {
    await runRemoteGit(['push', '--no-verify', '--no-progress', 'origin', `${ref}:${ref}`], remote);
  } catch (error) {
    if (!isPatchbayError(error, 'git_failed')) throw error;
    const landed = await runRemoteGit(['ls-remote', '--', 'origin', ref], remote).then(
      (out) => out.split('\t')[0]?.trim() === commit,
      () => false,
    );
    if (!landed) throw error;
    options.log.info({ branch: options.branch, commit }, 'the push landed though its answer was lost');
  }
}

async function commitsTheMirrorHas(mirror: Mirror, branches: string[], signal: AbortSignal): Promise<string[]> {
  const commits = await Promise.all(branches.map((b) => resolveBranch(mirror, b, signal)));
  return [...new Set(commits.filter((c): c is string => c !== undefined))];
}

async function createBundleInSandbox(options: PushBranchOptions, have: string[]): Promise<void> {
  const result = await options.sandbox.exec(bundleScript, {
    signal: options.signal,
    env: { PATCHBAY_BRANCH: options.branch, PATCHBAY_HAVE: have.join(' ') },
  });
  if (result.aborted) throw new PatchbayError('aborted', 'Bundling the branch was aborted');
  if (result.exitCode !== 0) {
    const detail = (result.stderr || result.stdout).trim().slice(-2000) || '(no output)';
    throw new PatchbayError(
      'git_failed',
      `git bundle in the sandbox failed (exit ${result.exitCode ?? 'none'}): ${detail}`,
    );
  }
}

/** After a failed push the mirror's branch goes back to the remote's, so the next try starts clean. */
async function restoreRef(mirror: Mirror, ref: string, previous: string | undefined): Promise<void> {
  const args = previous === undefined ? ['update-ref', '-d', ref] : ['update-ref', ref, previous];
  try {
    // Its own deadline: this also runs after the caller's signal fired.
    await runHostGit(args, { gitDir: mirror.gitDir, signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    if (!isPatchbayError(error)) throw error;
    // The next ensureMirror refresh resets it anyway.
  }
}

/** `*` matches any run of characters, including `/`; everything else is literal. */
export function matchesBranchPattern(branch: string, pattern: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`).test(branch);
}
