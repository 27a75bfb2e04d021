import type { Logger } from 'pino';
import type { OutcomeLedger } from '../../src/core/pull-outcome.ts';
import type { OutcomeSignal } from './classify-outcome.ts';
import type { GitHubClient } from './github-client.ts';

/** Records a webhook's outcome signals in the ledger (which ignores pull requests no session opened). */
export async function recordOutcome(
  signals: readonly OutcomeSignal[],
  ledger: OutcomeLedger,
  log: Logger,
): Promise<void> {
  for (const signal of signals) {
    switch (signal.kind) {
      case 'finished':
        await ledger.finished(signal.pull);
        break;
      case 'human-commits':
        await ledger.humanCommits({ ...signal.where, branch: signal.branch }, signal.shas);
        break;
      case 'review':
        await ledger.reviewed(signal.pull, signal.reviewId);
        break;
      case 'revert': {
        const marked = await ledger.reverted(signal.where, signal.reverted, signal.revertCommit, signal.at);
        if (marked.length > 0)
          log.info(
            { pulls: marked.map((p) => `${p.owner}/${p.repo}#${p.number}`), revert: signal.revertCommit },
            'merge of a Patchbay pull request reverted',
          );
        break;
      }
      case 'ci':
        await ledger.mergeCi(signal.where, signal.commit, signal.conclusion, signal.at);
        break;
      default: {
        const _never: never = signal;
        return _never;
      }
    }
  }
}

type PullJson = {
  state: string;
  merged?: boolean | null;
  merged_at?: string | null;
  closed_at?: string | null;
  merge_commit_sha?: string | null;
  merged_by?: { login: string } | null;
};

/**
 * Reads, through the App, the pull requests sessions opened before outcome tracking, and those
 * still open as far as Patchbay knows (webhooks missed while it was down): merged or closed, when,
 * by whom (a merge's; GitHub's PR does not name who closed it), and people's reviews. Each PR that
 * cannot be read is logged and skipped.
 */
export async function backfillOutcomes(deps: {
  client: GitHubClient;
  ledger: OutcomeLedger;
  log: Logger;
  signal?: AbortSignal;
}): Promise<{ read: number; finished: number }> {
  const { client, ledger, log } = deps;
  const bot = await client.identity();
  let read = 0;
  let finished = 0;
  for (const pull of await ledger.backfillCandidates()) {
    if (deps.signal?.aborted) break;
    try {
      const octokit = await client.forRepo({ owner: pull.owner, repo: pull.repo });
      const where = {
        owner: pull.owner,
        repo: pull.repo,
        pull_number: pull.number,
        ...(deps.signal && { request: { signal: deps.signal } }),
      };
      const pr = (await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', where)).data as PullJson;
      const { data: reviews } = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
        ...where,
        per_page: 100,
      });
      for (const review of reviews)
        if (review.user && review.user.login.toLowerCase() !== bot.login.toLowerCase() && review.user.type !== 'Bot')
          await ledger.reviewed(pull, Number(review.id));
      read += 1;
      if (pr.state !== 'closed') continue;
      const merged = pr.merged === true;
      const at = new Date((merged ? pr.merged_at : pr.closed_at) ?? Date.now());
      await ledger.finished({
        ...pull,
        state: merged ? 'merged' : 'closed',
        at,
        ...(merged && pr.merged_by && { by: pr.merged_by.login }),
        ...(merged && pr.merge_commit_sha && { mergeCommit: pr.merge_commit_sha }),
      });
      finished += 1;
    } catch (error) {
      // Stopped by a shutdown: the next start reads the rest; nothing went wrong.
      if (deps.signal?.aborted) break;
      log.warn(
        { err: error, pull: `${pull.owner}/${pull.repo}#${pull.number}` },
        'could not read a pull request for its outcome; skipped',
      );
    }
  }
  return { read, finished };
}

/**
 * The backfill as the module runs it: in the background from each start (start-up does not wait
 * for a read of every earlier pull request), stopped and awaited at shutdown.
 */
export class OutcomeBackfill {
  readonly #deps: { client: GitHubClient; ledger: OutcomeLedger; log: Logger };
  readonly #stopping = new AbortController();
  readonly #running = new Set<Promise<unknown>>();

  constructor(deps: { client: GitHubClient; ledger: OutcomeLedger; log: Logger }) {
    this.#deps = deps;
  }

  start(): void {
    const { log } = this.#deps;
    this.#running.add(
      backfillOutcomes({ ...this.#deps, signal: this.#stopping.signal })
        .then((done) => done.read > 0 && log.info(done, 'outcomes of earlier pull requests read from GitHub'))
        .catch((error: unknown) => log.warn({ err: error }, 'could not read the outcomes of earlier pull requests')),
    );
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    await Promise.allSettled([...this.#running]);
  }
}
