import type { Logger } from 'pino';
import type { Interpretation } from '../../src/core/delivery-interpreter.ts';
import type { PullClosed, PullPushed } from './webhook-payloads.ts';
import { verifyStatusContext } from './publish-gate.ts';
import { showNotVerified } from './pull-drafts.ts';
import { sessionMarker } from './render-pull-request.ts';
import type { InterpreterDeps } from './interpreter-deps.ts';

function clipText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The session that opened a pull request, when the PR's description carries its marker. */
async function sessionOfPull(
  deps: InterpreterDeps,
  pull: { owner: string; repo: string; number: number; body: string },
) {
  const session = await deps.context.sessions.findByThread({
    source: 'github',
    owner: pull.owner,
    repo: pull.repo,
    number: pull.number,
    kind: 'pull',
  });
  return session && pull.body.includes(sessionMarker(session.id)) ? session : undefined;
}

/**
 * A person pushed to a pull request a session opened: Patchbay did not check that commit, so it
 * gets a failing `patchbay/verify` saying so, and the PR goes back to draft, or where the plan has no
 * drafts gets its title marked (ready meant verified).
 */
export async function notePullPushed(
  deps: InterpreterDeps,
  pushed: PullPushed,
  signal: AbortSignal,
  log: Logger,
): Promise<Interpretation<never>> {
  const session = await sessionOfPull(deps, pushed);
  if (!session) return { kind: 'ignore', reason: 'not a pull request a Patchbay session opened' };
  const octokit = await deps.client.forInstallation(pushed.installationId);
  const request = { signal };
  await octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
    owner: pushed.owner,
    repo: pushed.repo,
    sha: pushed.headSha,
    state: 'failure',
    context: verifyStatusContext,
    target_url: `${deps.context.publicUrl}/sessions/${session.id}`,
    description: `Not verified: pushed by @${pushed.sender.login}; Patchbay did not check this commit`.slice(0, 140),
    request,
  });
  if (pushed.nodeId)
    await showNotVerified(
      { octokit, store: deps.store, signal, log },
      {
        owner: pushed.owner,
        repo: pushed.repo,
        number: pushed.number,
        nodeId: pushed.nodeId,
        draft: pushed.draft,
        title: pushed.title,
      },
    );
  log.info(
    { pull: pushed.number, sha: pushed.headSha, by: pushed.sender.login },
    'a person pushed to the pull request; marked not verified',
  );
  return { kind: 'ignore', reason: 'push to the pull request marked not verified' };
}

/** A pull request a session opened was closed unmerged: a lesson with the closer's reason. */
export async function notePullClosed(
  deps: InterpreterDeps,
  closed: PullClosed,
  signal: AbortSignal,
  log: Logger,
): Promise<Interpretation<never>> {
  const session = await sessionOfPull(deps, closed);
  if (!session) return { kind: 'ignore', reason: 'not a pull request a Patchbay session opened' };
  const octokit = await deps.client.forInstallation(closed.installationId);
  const { data: comments } = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
    owner: closed.owner,
    repo: closed.repo,
    issue_number: closed.number,
    per_page: 100,
    request: { signal },
  });
  // Only the closer's words: they had the right to close it, and their reason is the lesson.
  const said = comments
    .filter((c) => c.user?.login === closed.sender.login)
    .at(-1)
    ?.body?.trim();
  const reason = said ? `, who said: "${clipText(said.replace(/\s+/g, ' '), 400)}"` : ', with no reason given';
  const text = `A pull request Patchbay opened ("${clipText(closed.title, 120)}") was closed without merging by @${closed.sender.login}${reason}`;
  await deps.context.addLesson(session.repo, text);
  log.info({ pull: closed.number, by: closed.sender.login }, 'pull request closed unmerged; lesson recorded');
  return { kind: 'ignore', reason: 'pull request closed unmerged; lesson recorded' };
}
