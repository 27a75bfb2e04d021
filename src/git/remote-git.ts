import { setTimeout as sleep } from 'node:timers/promises';
import { isPatchbayError } from '../core/errors.ts';
import { type HostGitOptions, runHostGit } from './host-git.ts';

/**
 * What git says when the git host or the network in between failed the request, not the request
 * itself: a 5xx or 429 from the host's front end, a connection reset, closed or cut before the
 * whole answer came. Such a failure is worth one more try; a refusal (authentication, a missing
 * repository, a rejected ref) is not.
 */
const transientGitFailure =
  /The requested URL returned error: (?:5\d\d|429)|RPC failed|Empty reply from server|Connection reset|Recv failure|remote end hung up unexpectedly|unexpected disconnect|early EOF|transfer closed/;

/** Seconds before each further try of a git call the host or network failed. */
const retryDelaysMs = [1_000, 3_000, 6_000];

function isTransientGitFailure(error: unknown): boolean {
  return isPatchbayError(error, 'git_failed') && transientGitFailure.test(error.message);
}

/**
 * Runs a git command that talks to the remote (clone, fetch, ls-remote, push), trying it again
 * after a pause when the git host or the network failed it. Every such command Patchbay runs may
 * run twice: fetches and clones change nothing remote, and a push is never forced, so a push whose
 * answer was lost after the ref moved finds the ref already there ("Everything up-to-date").
 */
export async function runRemoteGit(args: readonly string[], options: HostGitOptions): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await runHostGit(args, options);
    } catch (error) {
      const delay = retryDelaysMs[attempt];
      if (delay === undefined || !isTransientGitFailure(error) || options.signal.aborted) throw error;
      // Cut short when the signal fires: the next try then fails as aborted.
      await sleep(delay, undefined, { signal: options.signal }).catch(() => undefined);
    }
  }
}
