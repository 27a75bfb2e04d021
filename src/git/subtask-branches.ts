import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ExecResult, Sandbox } from '../../sandbox/sandbox.ts';
import { PatchbayError } from '../core/errors.ts';
import { assertValidBranchName } from './branch-name.ts';
import { runHostGit } from './host-git.ts';
import {
  defaultBranch,
  describeRepo,
  ensureMirror,
  type Mirror,
  mirrorPath,
  resolveRepo,
  withMirrorLock,
} from './mirror.ts';

export type BringBranchesOptions = {
  /** The parent session's sandbox: the branches' commits are brought into its workspace. */
  sandbox: Sandbox;
  /** The repository the branches were pushed to (the parent session's). */
  repo: string;
  branches: readonly string[];
  dataDir: string;
  log: Logger;
  signal: AbortSignal;
  /** Extra environment for the network git calls (credentials). */
  env?: Record<string, string>;
};

/** A branch as the remote has it, now also in the workspace at `ref`. */
export type BroughtBranch = { branch: string; commit: string; ref: string };

/** Where the workspace keeps the sub-tasks' branches it was given (not branches the agent could push). */
export const subtaskRefPrefix = 'refs/patchbay/subtasks/';

const sha = /^[0-9a-f]{40,64}$/;
const bundlePath = '/tmp/patchbay-subtasks.bundle';

// Runs in the sandbox: which of the commits asked about its workspace already has.
const haveScript = `for c in $PATCHBAY_COMMITS; do git cat-file -e "$c^{commit}" 2>/dev/null && echo "$c"; done; exit 0`;

// Runs in the sandbox: fetches the bundle (from stdin as base64 when the host cannot put bytes),
// then points one ref per branch at its commit.
const fetchScript = `set -eu
if [ -n "$PATCHBAY_BUNDLE" ]; then
  if [ "$PATCHBAY_PUT" != 1 ]; then base64 -d > ${bundlePath}; fi
  git fetch --quiet --no-tags --no-write-fetch-head ${bundlePath} "+refs/heads/*:${subtaskRefPrefix}*" || { rm -f ${bundlePath}; exit 3; }
  rm -f ${bundlePath}
fi
for pair in $PATCHBAY_REFS; do git update-ref "${subtaskRefPrefix}\${pair%%=*}" "\${pair#*=}"; done
`;

/**
 * Brings sub-tasks' branches from the remote into a session's workspace, for the agent to merge.
 * The host fetches them into its mirror (it holds the credentials), checks that every one exists
 * before anything changes in the workspace, and sends the sandbox a bundle of only the commits it
 * lacks (none, when the workspace borrows the mirror's objects). The host never runs git in the
 * workspace. Throws PatchbayError 'not_found' naming every branch the remote does not have.
 */
export async function bringBranches(options: BringBranchesOptions): Promise<BroughtBranch[]> {
  for (const branch of options.branches) assertValidBranchName(branch);
  const gitDir = mirrorPath(options.dataDir, resolveRepo(options.repo));
  return withMirrorLock(gitDir, async () => {
    const mirror = await ensureMirror(options.repo, options);
    const tips = await branchTips(mirror, options.branches, options.signal);
    const lacking = await lackingTips(options, mirror, tips);
    const bundle = lacking ? await bundleFor(options, mirror, lacking) : undefined;
    await fetchIntoWorkspace(options, tips, bundle);
    options.log.info(
      { branches: tips.map((t) => t.branch), bundled: lacking?.branches },
      'sub-task branches brought in',
    );
    return tips.map((tip) => ({ ...tip, ref: `${subtaskRefPrefix}${tip.branch}` }));
  });
}

async function branchTips(
  mirror: Mirror,
  branches: readonly string[],
  signal: AbortSignal,
): Promise<{ branch: string; commit: string }[]> {
  const found = await Promise.all(
    branches.map(async (branch) => {
      const out = await runHostGit(['for-each-ref', '--format=%(objectname)', `refs/heads/${branch}`], {
        gitDir: mirror.gitDir,
        signal,
      });
      return { branch, commit: out.trim() };
    }),
  );
  const missing = found.filter((tip) => !sha.test(tip.commit)).map((tip) => tip.branch);
  if (missing.length > 0)
    throw new PatchbayError(
      'not_found',
      `${describeRepo(mirror.source)} has no branch ${missing.join(', ')}: ${missing.length === 1 ? 'it was' : 'they were'} never pushed or ${missing.length === 1 ? 'was' : 'were'} deleted. Nothing was merged.`,
    );
  return found;
}

type Lacking = { branches: string[]; exclude: string[] };

/** The tips the workspace does not have yet, and the commits it has that a bundle of them may leave out. */
async function lackingTips(
  options: BringBranchesOptions,
  mirror: Mirror,
  tips: { branch: string; commit: string }[],
): Promise<Lacking | undefined> {
  const candidates = await exclusionCandidates(mirror, tips, options.signal);
  const asked = [...new Set([...tips.map((t) => t.commit), ...candidates])];
  const result = await options.sandbox.exec(haveScript, {
    signal: options.signal,
    timeoutMs: 60_000,
    env: { PATCHBAY_COMMITS: asked.join(' ') },
  });
  if (result.exitCode !== 0) throw sandboxFailed('looking at the workspace', result);
  // The workspace's answer is data: only commits that were asked about count.
  const have = new Set(result.stdout.split('\n').filter((line) => asked.includes(line)));
  const branches = tips.filter((tip) => !have.has(tip.commit)).map((tip) => tip.branch);
  return branches.length === 0 ? undefined : { branches, exclude: candidates.filter((c) => have.has(c)) };
}

/** The default branch's tip and where each branch left it: what the workspace most likely has already. */
async function exclusionCandidates(mirror: Mirror, tips: { commit: string }[], signal: AbortSignal): Promise<string[]> {
  const main = await defaultBranch(mirror, signal);
  if (main === undefined) return [];
  const mainTip = (await runHostGit(['rev-parse', `refs/heads/${main}`], { gitDir: mirror.gitDir, signal })).trim();
  const bases = await Promise.all(
    tips.map((tip) =>
      runHostGit(['merge-base', tip.commit, mainTip], { gitDir: mirror.gitDir, signal }).then(
        (out) => out.trim(),
        () => '',
      ),
    ),
  );
  return [...new Set([mainTip, ...bases])].filter((c) => sha.test(c));
}

async function bundleFor(options: BringBranchesOptions, mirror: Mirror, lacking: Lacking): Promise<Buffer> {
  const scratch = join(options.dataDir, 'tmp');
  await mkdir(scratch, { recursive: true, mode: 0o700 });
  const file = join(scratch, `subtasks-${randomBytes(8).toString('hex')}.bundle`);
  const revs = [
    ...lacking.branches.map((branch) => `refs/heads/${branch}`),
    ...lacking.exclude.map((commit) => `^${commit}`),
  ];
  try {
    await runHostGit(['bundle', 'create', '--quiet', file, ...revs], { gitDir: mirror.gitDir, signal: options.signal });
    return await readFile(file);
  } finally {
    await rm(file, { force: true });
  }
}

async function fetchIntoWorkspace(
  options: BringBranchesOptions,
  tips: { branch: string; commit: string }[],
  bundle: Buffer | undefined,
): Promise<void> {
  const { sandbox, signal } = options;
  const put = bundle !== undefined && sandbox.putBytes !== undefined;
  if (put) await sandbox.putBytes!(bundlePath, bundle);
  const result = await sandbox.exec(fetchScript, {
    signal,
    timeoutMs: 10 * 60_000,
    ...(bundle && !put && { stdin: `${bundle.toString('base64')}\n` }),
    env: {
      PATCHBAY_BUNDLE: bundle ? '1' : '',
      PATCHBAY_PUT: put ? '1' : '0',
      PATCHBAY_REFS: tips.map((tip) => `${tip.branch}=${tip.commit}`).join(' '),
    },
  });
  if (result.exitCode !== 0) throw sandboxFailed("fetching the sub-tasks' branches into the workspace", result);
}

function sandboxFailed(what: string, result: ExecResult): PatchbayError {
  const detail = (result.stderr || result.stdout).trim().slice(-2000) || '(no output)';
  return new PatchbayError('git_failed', `${what} failed (exit ${result.exitCode ?? 'none'}): ${detail}`);
}
