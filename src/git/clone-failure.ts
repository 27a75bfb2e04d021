import { PatchbayError } from '../core/errors.ts';

/**
 * What a failed clone or fetch of a repository means to the person who asked, and what to do:
 * one sentence, without git's command line, the server's mirror path or an error code (those stay
 * in the error's cause, for the operator's log). Pure.
 */
export function cloneFailure(shownRepo: string, action: 'clone' | 'fetch', error: Error): PatchbayError {
  const detail = error.message;
  const why = reasonOf(detail);
  return new PatchbayError('git_failed', `Could not ${action} ${shownRepo}: ${why.what}. ${why.todo}`, {
    cause: error,
  });
}

type Reason = { what: string; todo: string };

const CHECK_ACCESS =
  'Check the repository URL, and that Patchbay may read it (the GitHub App installed on it, or a token with access).';

/** git's words, read in the C locale runHostGit sets, to one of the reasons people can act on. */
function reasonOf(detail: string): Reason {
  if (/repository .* not found|not found|does not exist|does not appear to be a git repository|404/i.test(detail))
    return { what: 'the repository was not found, or Patchbay may not see it', todo: CHECK_ACCESS };
  if (
    /authentication failed|could not read (username|password)|permission denied|403|401|terminal prompts disabled/i.test(
      detail,
    )
  )
    return { what: 'access was refused', todo: CHECK_ACCESS };
  if (
    /could not resolve host|failed to connect|connection (refused|timed out|reset)|timed out|network is unreachable|couldn't connect/i.test(
      detail,
    )
  )
    return {
      what: 'its host could not be reached',
      todo: "Check the URL's host name, and that this server can reach it; then send the request again.",
    };
  if (/remote branch .* not found|couldn't find remote ref/i.test(detail))
    return { what: 'the branch named was not found', todo: 'Check the branch name and send the request again.' };
  if (/killed by a signal|was aborted/i.test(detail))
    return { what: 'git was interrupted', todo: 'Send the request again.' };
  return { what: 'git could not read it', todo: `${CHECK_ACCESS} The server's log has git's own message.` };
}
