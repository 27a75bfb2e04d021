import type { Sandbox } from '../../sandbox/sandbox.ts';
import { PatchbayError } from '../core/errors.ts';
import { isValidBranchName } from './branch-name.ts';

export type GitIdentity = { name: string; email: string };

export type CommitAllOptions = {
  message: string;
  author: GitIdentity;
  /** Added as `Co-authored-by:` trailers, deduplicated by email, without the author. */
  coAuthors?: GitIdentity[];
  /** Who records the commit; Patchbay by default. */
  committer?: GitIdentity;
  /** Adds the author's `Signed-off-by:` trailer: the repository checks the DCO sign-off. */
  signOff?: boolean;
  /** When given, refuse to commit unless the workspace is on this branch. */
  branch?: string;
  signal: AbortSignal;
};

export type CommitAllResult = { commit: string } | { commit: undefined };

export const patchbayCommitter: GitIdentity = { name: 'Patchbay', email: 'patchbay@users.noreply.github.com' };

// Hooks are off (the model wrote them), signing is off (no keys in the sandbox), and the message is
// kept as written: the default cleanup would drop lines starting with '#', such as "#123 fixed".
const git = 'git -c core.hooksPath=/dev/null -c commit.gpgSign=false -c core.fsmonitor=false';
const script = `set -eu
if [ -n "\${PATCHBAY_BRANCH:-}" ]; then
  head=$(git symbolic-ref --quiet HEAD || echo detached)
  if [ "$head" != "refs/heads/$PATCHBAY_BRANCH" ]; then
    echo "workspace is on $head, expected refs/heads/$PATCHBAY_BRANCH" >&2
    exit 3
  fi
fi
${git} add -A
if ${git} diff --cached --quiet; then
  echo nothing-to-commit
  exit 0
fi
${git} commit --quiet --no-verify --cleanup=whitespace -F -
echo "commit $(git rev-parse --verify HEAD)"
`;

/**
 * Stages everything in the sandbox's workspace and commits it, inside the sandbox. The message goes
 * through stdin and the identities through the environment, so nothing the user or model wrote is
 * ever parsed by the shell.
 */
export async function commitAll(sandbox: Sandbox, options: CommitAllOptions): Promise<CommitAllResult> {
  const author = cleanIdentity(options.author, 'author');
  const committer = cleanIdentity(options.committer ?? patchbayCommitter, 'committer');
  if (options.branch !== undefined && !isValidBranchName(options.branch)) {
    throw new PatchbayError('invalid_input', `Invalid branch name ${JSON.stringify(options.branch)}`);
  }
  const coAuthored = withCoAuthors(options.message, author, options.coAuthors ?? []);
  const message = options.signOff
    ? appendTrailers(coAuthored.replace(/\s+$/, ''), [`Signed-off-by: ${author.name} <${author.email}>`])
    : coAuthored;
  const result = await sandbox.exec(script, {
    stdin: message,
    signal: options.signal,
    env: {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: committer.name,
      GIT_COMMITTER_EMAIL: committer.email,
      ...(options.branch === undefined ? {} : { PATCHBAY_BRANCH: options.branch }),
    },
  });
  if (result.aborted) throw new PatchbayError('aborted', 'Commit was aborted');
  if (result.exitCode !== 0) {
    const reason = result.timedOut ? 'timed out' : `exit ${result.exitCode ?? 'none'}`;
    throw new PatchbayError(
      'git_failed',
      `git commit in the sandbox failed (${reason}): ${tail(result.stderr || result.stdout)}`,
    );
  }
  const match = /^commit ([0-9a-f]{40,64})$/m.exec(result.stdout);
  if (match?.[1]) return { commit: match[1] };
  if (/^nothing-to-commit$/m.test(result.stdout)) return { commit: undefined };
  throw new PatchbayError('git_failed', `git commit in the sandbox gave no commit id: ${tail(result.stdout)}`);
}

/** The message with one `Co-authored-by:` trailer per distinct co-author other than the author. */
export function withCoAuthors(message: string, author: GitIdentity, coAuthors: readonly GitIdentity[]): string {
  const body = message.replace(/\s+$/, '');
  if (body.trim().length === 0) throw new PatchbayError('invalid_input', 'Commit message must not be empty');
  const seen = new Set([author.email.toLowerCase()]);
  const trailers: string[] = [];
  for (const raw of coAuthors) {
    const person = cleanIdentity(raw, 'co-author');
    const key = person.email.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    trailers.push(`Co-authored-by: ${person.name} <${person.email}>`);
  }
  return appendTrailers(body, trailers);
}

/** Trailers after the message, joining an existing trailer block so git and GitHub read them as one. */
function appendTrailers(body: string, trailers: readonly string[]): string {
  if (trailers.length === 0) return `${body}\n`;
  const lastParagraph = body.split(/\n\s*\n/).pop() ?? '';
  const endsWithTrailers =
    /\n\s*\n/.test(body) && lastParagraph.split('\n').every((line) => /^[A-Za-z0-9-]+: \S/.test(line));
  return `${body}${endsWithTrailers ? '\n' : '\n\n'}${trailers.join('\n')}\n`;
}

/** Names and emails end up in commit headers and trailers: no line breaks or angle brackets. */
function cleanIdentity(identity: GitIdentity, what: string): GitIdentity {
  const name = identity.name
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point.
    .replace(/[\x00-\x1f\x7f<>]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const email = identity.email.trim();
  if (!name || !/^[^\s<>@]+@[^\s<>@]+$/.test(email)) {
    throw new PatchbayError(
      'invalid_input',
      `Invalid ${what} identity ${JSON.stringify(`${identity.name} <${identity.email}>`)}`,
    );
  }
  return { name, email };
}

function tail(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > 2000 ? `…${trimmed.slice(-2000)}` : trimmed || '(no output)';
}
