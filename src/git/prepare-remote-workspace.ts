import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { PatchbayError } from '../core/errors.ts';
import { assertValidBranchName } from './branch-name.ts';
import { runHostGit } from './host-git.ts';
import { z } from 'zod';
import { isValidBranchName } from './branch-name.ts';
import { ensureMirror, mirrorPath, resolveRepo, withMirrorLock, type Mirror } from './mirror.ts';
import {
  BaseRecord,
  baseFile,
  requireBranch,
  requireDefaultBranch,
  resolveSessionBase,
  workspaceOriginUrl,
  type PrepareWorkspaceOptions,
  type PreparedWorkspace,
} from './prepare-workspace.ts';

export type PrepareRemoteWorkspaceOptions = Omit<PrepareWorkspaceOptions, 'workspaceDir'> & { sandbox: Sandbox };

/** Where the seed bundle is written inside the sandbox, outside the workspace. */
const seedPath = '/tmp/patchbay-seed.bundle';

// Runs in the sandbox, in its empty workspace: the same checkout `prepareWorkspace` makes with
// `git clone`, made from a bundle of the host's mirror (the sandbox has no token and no network).
const seedScript = `set -eu
if [ -n "$(ls -A . 2>/dev/null)" ]; then echo "the workspace is not empty and has no .git; refusing to check out into it" >&2; exit 3; fi
git init -q -b "$PATCHBAY_BASE_BRANCH" .
git fetch -q --no-tags ${seedPath} "+refs/heads/*:refs/remotes/origin/*"
git remote add origin "$PATCHBAY_ORIGIN"
git branch -q "$PATCHBAY_BASE_BRANCH" "refs/remotes/origin/$PATCHBAY_BASE_BRANCH"
git checkout -q --no-track -b "$PATCHBAY_BRANCH" "$PATCHBAY_BASE_COMMIT"
printf '%s\\n' "$PATCHBAY_RECORD" > .git/${baseFile}
rm -f ${seedPath}
`;

/**
 * `prepareWorkspace` for a sandbox the host cannot see into (Modal): the host refreshes its mirror
 * (with the credentials), bundles the base branch (and the session branch when the remote already
 * has it) and writes the bundle into the sandbox, which checks it out. A sandbox that already has
 * `.git` is a follow-up and is left as it is; its base record is read back as data.
 */
export async function prepareRemoteWorkspace(options: PrepareRemoteWorkspaceOptions): Promise<PreparedWorkspace> {
  const { sandbox, signal, log } = options;
  assertValidBranchName(options.branch);
  if (options.baseBranch !== undefined) assertValidBranchName(options.baseBranch, 'base branch');
  if (!sandbox.putBytes)
    throw new PatchbayError(
      'sandbox_unavailable',
      'this sandbox has neither a host workspace nor a way to receive files',
    );
  const gitDir = mirrorPath(options.dataDir, resolveRepo(options.repo));
  return withMirrorLock(gitDir, async () => {
    const mirror = await ensureMirror(options.repo, { ...options, updateHead: options.baseBranch === undefined });
    const probe = await sandbox.exec(
      `if [ -e .git ]; then echo git; head -c 4096 .git/${baseFile} 2>/dev/null || true; else echo none; fi`,
      { signal, timeoutMs: 60_000 },
    );
    if (probe.exitCode !== 0)
      throw new PatchbayError(
        'sandbox_failed',
        `could not look at the sandbox workspace: ${(probe.stderr || probe.stdout).trim().slice(0, 500)}`,
      );
    const [kind, ...rest] = probe.stdout.split('\n');
    const found = kind === 'git' ? parseRecord(rest.join('\n')) : undefined;
    if (found?.branch !== undefined && found.branch !== options.branch) {
      // Another session's set-up checkout (the repository's setup image): take it over.
      return adoptTemplate(options, mirror, found);
    }
    if (kind === 'git') {
      const parsed = found && { baseBranch: found.baseBranch, baseCommit: found.baseCommit };
      if (parsed) return { ...parsed, reused: true };
      log.warn('workspace base record missing or invalid; reporting the current base branch instead');
      const baseBranch = options.baseBranch ?? (await requireDefaultBranch(mirror, signal));
      return { baseBranch, baseCommit: await requireBranch(mirror, baseBranch, signal), reused: true };
    }
    const { baseBranch, baseCommit, existing, refs } = await resolveBase(options, mirror);
    await shipBundle(options, mirror, refs);
    await runInSandbox(options, seedScript, 'checking out the workspace in the sandbox', {
      baseBranch,
      baseCommit,
      PATCHBAY_ORIGIN: workspaceOriginUrl,
    });
    log.info(
      { branch: options.branch, baseBranch, baseCommit, existingBranch: existing !== undefined },
      'remote workspace prepared',
    );
    return { baseBranch, baseCommit, reused: false };
  });
}

/** The base record a remote workspace keeps also names the session branch it was made for. */
const RemoteRecord = BaseRecord.extend({ branch: z.string().refine(isValidBranchName).optional() });
type RemoteRecord = z.infer<typeof RemoteRecord>;

// Runs in the sandbox, in a checkout another session set up: fetch what is new from the bundle, move
// to this session's branch at its base (discarding nothing but that session's branch), keep the
// setup output (node_modules and the like, excluded from git by the setup step).
const adoptScript = `set -eu
git fetch -q --no-tags ${seedPath} "+refs/heads/*:refs/remotes/origin/*"
git checkout -q -f --no-track -B "$PATCHBAY_BRANCH" "$PATCHBAY_BASE_COMMIT"
git branch -q -f "$PATCHBAY_BASE_BRANCH" "refs/remotes/origin/$PATCHBAY_BASE_BRANCH"
git for-each-ref --format='%(refname:short)' refs/heads/ | while read -r b; do
  [ "$b" = "$PATCHBAY_BRANCH" ] || [ "$b" = "$PATCHBAY_BASE_BRANCH" ] || git branch -q -D "$b"
done
printf '%s\\n' "$PATCHBAY_RECORD" > .git/${baseFile}
rm -f ${seedPath}
`;

/**
 * A new session whose sandbox started from the repository's setup image: the host bundles only the
 * commits the image's checkout lacks (everything, when its commit is no longer in the mirror).
 */
async function adoptTemplate(
  options: PrepareRemoteWorkspaceOptions,
  mirror: Mirror,
  found: RemoteRecord,
): Promise<PreparedWorkspace> {
  const { signal, log } = options;
  const { baseBranch, baseCommit, baseTip, refs } = await resolveBase(options, mirror);
  const have = await runHostGit(['cat-file', '-e', `${found.baseCommit}^{commit}`], {
    gitDir: mirror.gitDir,
    signal,
  }).then(
    () => true,
    () => false,
  );
  // A bundle needs at least one new commit; with nothing new the full refs are sent (still small).
  const upToDate = have && refs.length === 1 && found.baseCommit === baseTip;
  await shipBundle(options, mirror, have && !upToDate ? [...refs, `^${found.baseCommit}`] : refs);
  await runInSandbox(options, adoptScript, 'taking over the set-up workspace in the sandbox', {
    baseBranch,
    baseCommit,
  });
  log.info(
    {
      branch: options.branch,
      baseBranch,
      baseCommit,
      templateCommit: found.baseCommit,
      incremental: have && !upToDate,
    },
    'remote workspace taken over from the setup image',
  );
  return { baseBranch, baseCommit, reused: false };
}

/** The session's base (see resolveSessionBase) and the refs a bundle of it must carry. */
async function resolveBase(options: PrepareRemoteWorkspaceOptions, mirror: Mirror) {
  const base = await resolveSessionBase(options, mirror);
  return {
    ...base,
    refs: [`refs/heads/${base.baseBranch}`, ...(base.existing ? [`refs/heads/${options.branch}`] : [])],
  };
}

/** Runs one of the checkout scripts above in the sandbox with the session's branches, failing with `what`. */
async function runInSandbox(
  options: PrepareRemoteWorkspaceOptions,
  script: string,
  what: string,
  base: { baseBranch: string; baseCommit: string; PATCHBAY_ORIGIN?: string },
): Promise<void> {
  const { baseBranch, baseCommit, ...extra } = base;
  const result = await options.sandbox.exec(script, {
    signal: options.signal,
    timeoutMs: 30 * 60_000,
    env: {
      PATCHBAY_BASE_BRANCH: baseBranch,
      PATCHBAY_BRANCH: options.branch,
      PATCHBAY_BASE_COMMIT: baseCommit,
      PATCHBAY_RECORD: JSON.stringify({ baseBranch, baseCommit, branch: options.branch }),
      ...extra,
    },
  });
  if (result.exitCode !== 0) {
    throw new PatchbayError(
      'git_failed',
      `${what} failed (exit ${result.exitCode ?? 'none'}): ${(result.stderr || result.stdout).trim().slice(-2000)}`,
    );
  }
}

async function shipBundle(options: PrepareRemoteWorkspaceOptions, mirror: Mirror, revs: string[]): Promise<void> {
  const scratch = join(options.dataDir, 'tmp');
  await mkdir(scratch, { recursive: true, mode: 0o700 });
  const bundle = join(scratch, `seed-${randomBytes(8).toString('hex')}.bundle`);
  try {
    await runHostGit(['bundle', 'create', '--quiet', bundle, ...revs], {
      gitDir: mirror.gitDir,
      signal: options.signal,
    });
    await options.sandbox.putBytes!(seedPath, await readFile(bundle));
  } finally {
    await rm(bundle, { force: true });
  }
}

function parseRecord(text: string): RemoteRecord | undefined {
  try {
    const parsed = RemoteRecord.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
