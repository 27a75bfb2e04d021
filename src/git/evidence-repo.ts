import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { PatchbayError } from '../core/errors.ts';
import { runHostGit } from './host-git.ts';
import { mirrorGitConfig, mirrorPath, resolveRepo } from './mirror.ts';
import { takeBundle, takeBundleFromSandbox } from './take-bundle.ts';

/**
 * A host-owned bare repository holding exactly the objects of one judged commit: what the gate
 * computes its evidence in (the verifier's diff, the list of changed files, the checkout the checks
 * run in). Nothing of the agent's workspace reaches it but objects, which are checked (fsck) and
 * named by their hash: no config, hooks, attributes or info files of the workspace.
 */
export type EvidenceRepo = {
  gitDir: string;
  commit: string;
  baseCommit: string;
  /** Runs git in the evidence repository with no attributes, external diff drivers or textconv anywhere. */
  git(args: readonly string[], signal: AbortSignal): Promise<string>;
  /**
   * A bundle of the judged commit, made on the host, at `refs/patchbay/judged`. `thin`: without the
   * base's history, for a sandbox that sees the mirror's objects. The caller removes the file.
   */
  bundle(options: { thin: boolean; signal: AbortSignal }): Promise<string>;
  /** Removes the repository. Never throws. */
  close(): Promise<void>;
};

export type TakeEvidenceOptions = {
  /** The agent's sandbox: it bundles the commit; the host never runs git in its workspace. */
  sandbox: Sandbox;
  /** Host path of a local sandbox's workspace; absent for a remote sandbox. */
  workspaceDir?: string | undefined;
  dataDir: string;
  repo: string;
  commit: string;
  baseCommit: string;
  signal: AbortSignal;
  maxBundleBytes?: number;
};

const sha = /^[0-9a-f]{40,64}$/;
const judgedRef = 'refs/patchbay/judged';
const sandboxBundle = 'patchbay-evidence.bundle';
/** Git's empty tree: attributes are read from it (git 2.40+ honours GIT_ATTR_SOURCE), so from nowhere. */
const emptyTree = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/**
 * What every git call in the evidence repository runs with: no attributes file, no external diff
 * and no textconv from any config (the repository's own config is the host's, and host git reads
 * no system or global config).
 */
export const evidenceGitConfig: Record<string, string> = {
  ...mirrorGitConfig,
  'core.attributesFile': '/dev/null',
  'core.hooksPath': '/dev/null',
  'diff.external': '',
  'diff.noprefix': 'false',
  'diff.mnemonicPrefix': 'false',
  'diff.relative': 'false',
  'diff.orderFile': '/dev/null',
};

// Runs in the agent's sandbox: its objects are the agent's anyway, and the host checks them.
const bundleScript = `set -eu
rm -f .git/${sandboxBundle}
git update-ref refs/patchbay/evidence "$PATCHBAY_COMMIT"
git bundle create --quiet .git/${sandboxBundle} refs/patchbay/evidence "^$PATCHBAY_BASE"
git update-ref -d refs/patchbay/evidence
`;

/**
 * Takes the judged commit's objects out of the agent's workspace into a fresh host-owned repository
 * whose other objects are the mirror's (the base is there). Throws PatchbayError 'git_failed' when
 * the workspace cannot hand over exactly `commit`.
 */
export async function takeEvidence(options: TakeEvidenceOptions): Promise<EvidenceRepo> {
  const { commit, baseCommit, signal } = options;
  if (!sha.test(commit) || !sha.test(baseCommit))
    throw new PatchbayError(
      'invalid_input',
      `not a commit id: ${JSON.stringify(sha.test(commit) ? baseCommit : commit)}`,
    );
  const scratchDir = join(options.dataDir, 'tmp');
  await mkdir(scratchDir, { recursive: true, mode: 0o700 });
  const gitDir = join(scratchDir, `evidence-${randomBytes(8).toString('hex')}.git`);
  const git = (args: readonly string[], signal: AbortSignal) =>
    runHostGit(args, { gitDir, signal, config: evidenceGitConfig, env: { GIT_ATTR_SOURCE: emptyTree } });
  const close = () => rm(gitDir, { recursive: true, force: true }).catch(() => undefined);
  try {
    await runHostGit(['init', '--quiet', '--bare', '--template=', gitDir], { signal });
    const mirrorObjects = join(mirrorPath(options.dataDir, resolveRepo(options.repo)), 'objects');
    await mkdir(join(gitDir, 'objects', 'info'), { recursive: true });
    await writeFile(join(gitDir, 'objects', 'info', 'alternates'), `${mirrorObjects}\n`);
    await git(['cat-file', '-e', `${baseCommit}^{commit}`], signal);
    if (commit !== baseCommit) await fetchFromSandbox(options, gitDir, signal);
    // Every object of the change is there: a bundle may carry a commit without its trees.
    await git(['rev-list', '--objects', '--quiet', commit, `^${baseCommit}`], signal);
    await git(['update-ref', judgedRef, commit], signal);
    const judged = (await git(['rev-parse', '--verify', `${judgedRef}^{commit}`], signal)).trim();
    if (judged !== commit)
      throw new PatchbayError('git_failed', `the evidence repository holds ${judged}, not ${commit}`);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    gitDir,
    commit,
    baseCommit,
    git,
    async bundle({ thin, signal }) {
      const file = join(scratchDir, `judged-${randomBytes(8).toString('hex')}.bundle`);
      // A thin bundle of the base itself would be empty, which git refuses.
      const exclude = thin && commit !== baseCommit ? [`^${baseCommit}`] : [];
      await git(['bundle', 'create', '--quiet', file, judgedRef, ...exclude], signal);
      return file;
    },
    close,
  };
}

async function fetchFromSandbox(options: TakeEvidenceOptions, gitDir: string, signal: AbortSignal): Promise<void> {
  const made = await options.sandbox.exec(bundleScript, {
    signal,
    timeoutMs: 300_000,
    env: { PATCHBAY_COMMIT: options.commit, PATCHBAY_BASE: options.baseCommit },
  });
  if (made.exitCode !== 0)
    throw new PatchbayError(
      'git_failed',
      `could not bundle ${options.commit.slice(0, 12)} in the workspace: ${(made.stderr || made.stdout).trim().slice(-1000)}`,
    );
  const scratchDir = join(options.dataDir, 'tmp');
  const maxBytes = options.maxBundleBytes ?? 2 * 1024 ** 3;
  let copy: string | undefined;
  try {
    copy = options.workspaceDir
      ? await takeBundle({ workspaceDir: options.workspaceDir, scratchDir, maxBytes, name: sandboxBundle })
      : await takeBundleFromSandbox({ sandbox: options.sandbox, scratchDir, maxBytes, path: `.git/${sandboxBundle}` });
    // Only the commit's objects: the bundle's ref is fetched to a ref of the host's choosing.
    await runHostGit(
      [
        'fetch',
        '--no-tags',
        '--no-write-fetch-head',
        '--no-progress',
        copy,
        'refs/patchbay/evidence:refs/patchbay/fetched',
      ],
      { gitDir, signal, config: { ...evidenceGitConfig, 'transfer.fsckObjects': 'true' } },
    );
  } finally {
    if (copy) await rm(copy, { force: true });
    await options.sandbox
      .exec(`rm -f .git/${sandboxBundle}`, { signal: AbortSignal.timeout(30_000) })
      .catch(() => undefined);
  }
}
