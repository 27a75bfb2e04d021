import type { Logger } from 'pino';
import { tryAdvisoryLock } from '../../../db/advisory-lock.ts';
import type { SetupImage, SetupImageRefresh } from '../../../sandbox/modal/modal-sandbox-provider.ts';
import type { Sandbox, SandboxSpec } from '../../../sandbox/sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import { firstGitEnv, type GitCredentials } from '../../core/publisher.ts';
import { runHostGit } from '../../git/host-git.ts';
import {
  defaultBranch,
  ensureMirror,
  mirrorPath,
  resolveBranch,
  resolveRepo,
  withMirrorLock,
} from '../../git/mirror.ts';
import { prepareRemoteWorkspace } from '../../git/prepare-remote-workspace.ts';
import { runCheckCommand } from '../../harness/checks/run-checks.ts';
import type { KnownCommand } from '../../harness/knowledge/knowledge-document.ts';
import type { KnowledgeStore } from '../../harness/knowledge/knowledge-store.ts';
import { loadKnowledge } from '../../harness/knowledge/load-knowledge.ts';

/** The advisory-lock class of setup-image refreshes (an arbitrary constant, "PB" + 2). */
const REFRESH_LOCK_CLASS = 0x5042_0002;
/** The branch the refreshed checkout is on; a session taking the image over moves to its own. */
const REFRESH_BRANCH = 'patchbay/setup-image';

export type RefreshOutcome =
  | { repo: string; outcome: 'fresh'; behind: number }
  | { repo: string; outcome: 'refreshed'; from: string; to: string; imageId: string }
  | { repo: string; outcome: 'superseded' | 'busy' }
  | { repo: string; outcome: 'skipped' | 'failed' | 'held'; reason: string };

export type SetupImageRefresher = {
  /** One pass over every setup image; resolves when it is done (the timer drives these in production). */
  refreshOnce(): Promise<RefreshOutcome[]>;
  /** Stops the timer and aborts a pass under way. */
  stop(): Promise<void>;
};

export type SetupImageRefresherOptions = {
  images: SetupImageRefresh;
  /** For the per-repository advisory lock, held on a connection of its own while a refresh runs. */
  databaseUrl: string;
  dataDir: string;
  knowledge: KnowledgeStore;
  gitCredentials: readonly GitCredentials[];
  network: SandboxSpec['network'];
  /** How far (in commits) the default branch must be ahead of an image's base to refresh it. */
  minCommits: number;
  /** Minutes between passes; the timer runs only when this is above 0. */
  everyMinutes: number;
  setupTimeoutMs: number;
  log: Logger;
};

/** One refresher's state, shared by the steps below. */
type Refresher = {
  options: SetupImageRefresherOptions;
  log: Logger;
  controller: AbortController;
  /** Repositories whose mirror could not be refreshed, with the reason already logged. */
  unreachable: Map<string, string>;
  /** The tip whose refresh failed, per repository: not tried again (every pass) until the branch moves. */
  failedAt: Map<string, string>;
  /** The pass under way in this process, if any. */
  pass: Promise<RefreshOutcome[]> | undefined;
};

/** Where a repository's default branch stands against an image: its tip and how far ahead of the image it is. */
type BranchState = { env: Record<string, string> | undefined; tip: string; behind: number };

/**
 * Keeps each repository's Modal setup image near its default branch: when the branch is
 * `minCommits` or more ahead of an image's base, a sandbox started from the image takes only the new
 * commits (as a session would), runs the repository's setup commands, and is snapshotted as the new
 * image. One process refreshes a repository at a time (an advisory lock on the shared database);
 * a refresh that fails leaves the old image in place and logs one line.
 */
export function createSetupImageRefresher(options: SetupImageRefresherOptions): SetupImageRefresher {
  const refresher: Refresher = {
    options,
    log: options.log.child({ component: 'setup-image-refresher' }),
    controller: new AbortController(),
    unreachable: new Map(),
    failedAt: new Map(),
    pass: undefined,
  };
  const refreshOnce = () => {
    // One pass at a time in this process; a second caller waits for the one under way.
    refresher.pass ??= runPass(refresher).finally(() => {
      refresher.pass = undefined;
    });
    return refresher.pass;
  };
  const timer =
    options.everyMinutes > 0
      ? setInterval(() => {
          if (refresher.pass) return;
          refreshOnce().catch((error: unknown) => {
            if (!refresher.controller.signal.aborted)
              refresher.log.warn({ err: error }, 'setup-image refresh pass failed');
          });
        }, options.everyMinutes * 60_000)
      : undefined;
  timer?.unref();
  return {
    refreshOnce,
    async stop() {
      clearInterval(timer);
      refresher.controller.abort();
      await refresher.pass?.catch(() => undefined);
    },
  };
}

/** One pass over every setup image, each repository under its advisory lock (busy when another process holds it). */
async function runPass(refresher: Refresher): Promise<RefreshOutcome[]> {
  const { options, log } = refresher;
  const signal = refresher.controller.signal;
  const outcomes: RefreshOutcome[] = [];
  for (const listed of await options.images.setupImages()) {
    if (signal.aborted) break;
    const lock = await tryAdvisoryLock({
      url: options.databaseUrl,
      classId: REFRESH_LOCK_CLASS,
      keys: [listed.repo],
      log,
      what: 'setup-image refresh',
    });
    if (!lock) {
      outcomes.push({ repo: listed.repo, outcome: 'busy' });
      continue;
    }
    try {
      // Another worker may have refreshed it between the listing and the lock.
      const current = (await options.images.setupImages()).find((image) => image.repo === listed.repo);
      if (current) outcomes.push(await refreshOne(refresher, current, signal));
    } finally {
      await lock.release();
    }
  }
  return outcomes;
}

/** Refreshes one image when its repository's default branch is far enough ahead and did not fail there before. */
async function refreshOne(refresher: Refresher, image: SetupImage, signal: AbortSignal): Promise<RefreshOutcome> {
  const { repo } = image;
  const branch = await branchState(refresher, image, signal);
  if ('outcome' in branch) return branch;
  if (branch.behind < refresher.options.minCommits) return { repo, outcome: 'fresh', behind: branch.behind };
  if (refresher.failedAt.get(repo) === branch.tip)
    return {
      repo,
      outcome: 'held',
      reason: `its refresh at ${branch.tip.slice(0, 12)} failed; it is tried again once the default branch moves`,
    };
  return rebuildImage(refresher, image, branch, signal);
}

/** Brings the repository's mirror up to date and counts how far its default branch is ahead of the image. */
async function branchState(
  refresher: Refresher,
  image: SetupImage,
  signal: AbortSignal,
): Promise<BranchState | RefreshOutcome> {
  const { options, unreachable } = refresher;
  const { repo } = image;
  const repoLog = refresher.log.child({ repo });
  try {
    const env = await firstGitEnv(options.gitCredentials, repo, signal);
    const mirror = await withMirrorLock(mirrorPath(options.dataDir, resolveRepo(repo)), () =>
      ensureMirror(repo, { dataDir: options.dataDir, log: repoLog, signal, updateHead: true, ...(env && { env }) }),
    );
    const branch = await defaultBranch(mirror, signal);
    const tip = branch ? await resolveBranch(mirror, branch, signal) : undefined;
    if (!tip) throw new Error('the repository has no default branch');
    // An image whose commit is gone from the mirror (a force-push) is as far behind as can be.
    const counted = await runHostGit(['rev-list', '--count', tip, `^${image.baseCommit}`], {
      gitDir: mirror.gitDir,
      signal,
    }).catch(() => undefined);
    unreachable.delete(repo);
    return { env, tip, behind: counted === undefined ? Number.POSITIVE_INFINITY : Number(counted.trim()) };
  } catch (error) {
    if (signal.aborted)
      throw new PatchbayError('aborted', `the refresh of ${repo}'s setup image was stopped`, { cause: error });
    const reason = `its mirror could not be refreshed: ${(error as Error).message}`;
    if (unreachable.get(repo) !== reason) repoLog.warn({ reason }, 'skipping the setup-image refresh of a repository');
    unreachable.set(repo, reason);
    return { repo, outcome: 'skipped', reason };
  }
}

/** Starts a sandbox from the image, brings it to the tip, runs the setup commands and records it as the new image. */
async function rebuildImage(
  refresher: Refresher,
  image: SetupImage,
  branch: BranchState,
  signal: AbortSignal,
): Promise<RefreshOutcome> {
  const { options, failedAt } = refresher;
  const { repo } = image;
  const repoLog = refresher.log.child({ repo });
  try {
    const knowledge = await loadKnowledge({
      repo,
      dataDir: options.dataDir,
      store: options.knowledge,
      log: repoLog,
      signal,
    });
    const setup = knowledge?.document.setup ?? [];
    let to = branch.tip;
    const result = await options.images.refreshSetupImage(image, { network: options.network }, async (sandbox) => {
      to = await prepareImage(sandbox, { options, repo, env: branch.env, setup, log: repoLog, signal });
      return { commit: to };
    });
    if (result.outcome === 'superseded') {
      repoLog.info(
        { imageId: result.imageId },
        'a session recorded a newer setup image while this one was refreshed; kept that one',
      );
      return { repo, outcome: 'superseded' };
    }
    failedAt.delete(repo);
    repoLog.info(
      { from: image.baseCommit, imageId: result.imageId, behind: branch.behind },
      'refreshed the setup image',
    );
    return { repo, outcome: 'refreshed', from: image.baseCommit, to, imageId: result.imageId };
  } catch (error) {
    if (signal.aborted)
      throw new PatchbayError('aborted', `the refresh of ${repo}'s setup image was stopped`, { cause: error });
    const reason = (error as Error).message;
    failedAt.set(repo, branch.tip);
    repoLog.warn(
      { imageId: image.imageId, baseCommit: image.baseCommit, reason },
      'could not refresh the setup image; the old one stays in use',
    );
    return { repo, outcome: 'failed', reason };
  }
}

/** In the image's sandbox: the workspace at the default branch's tip, with the setup run; resolves to the commit. */
async function prepareImage(
  sandbox: Sandbox,
  work: {
    options: SetupImageRefresherOptions;
    repo: string;
    env: Record<string, string> | undefined;
    setup: readonly KnownCommand[];
    log: Logger;
    signal: AbortSignal;
  },
): Promise<string> {
  const { options, repo, env, signal } = work;
  await prepareRemoteWorkspace({
    repo,
    branch: REFRESH_BRANCH,
    dataDir: options.dataDir,
    log: work.log,
    signal,
    sandbox,
    ...(env && { env }),
  });
  const head = await sandbox.exec('git rev-parse --verify HEAD', { signal, timeoutMs: 60_000 });
  const commit = head.stdout.trim();
  if (head.exitCode !== 0 || !/^[0-9a-f]{40,64}$/.test(commit))
    throw new Error(`the refreshed checkout has no HEAD: ${(head.stderr || head.stdout).trim().slice(0, 300)}`);
  for (const command of work.setup) {
    const run = await runCheckCommand(sandbox, {
      commit,
      phase: 'setup',
      command,
      timeoutMs: options.setupTimeoutMs,
      signal,
    });
    if (run.outcome !== 'passed') {
      throw new Error(
        `setup command \`${command.command}\` ${run.outcome === 'timed-out' ? 'timed out' : `failed with exit ${run.exitCode}`}: ${(run.logTail || run.logHead).trim().slice(-300)}`,
      );
    }
  }
  // As after a session's setup: what setup left untracked is never committed by a session.
  await sandbox.exec("git ls-files --others --exclude-standard --directory | sed 's#^#/#' >> .git/info/exclude", {
    signal,
    timeoutMs: 60_000,
  });
  return commit;
}
