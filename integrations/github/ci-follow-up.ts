import { fenceUntrusted } from '../../src/core/quote-untrusted.ts';
import type { PatchbayOctokit } from './github-client.ts';
import { failedConclusions, type CiReport } from './webhook-payloads.ts';

/** Automatic follow-up runs per pull request; after that, people decide. */
export const maxCiFollowUps = 2;

export type FollowUpDecision = { followUp: true } | { followUp: false; reason: string };

/**
 * Whether a CI failure on the head of a pull request a session opened starts a follow-up run.
 * Pure, so the rules are table-tested: never on a commit someone else pushed, at most
 * `maxCiFollowUps` per pull request, not again when the same failure came back after the last
 * attempt, and not while the session is busy with other work.
 */
export function decideCiFollowUp(input: {
  /** The failing head commit is one the session pushed. */
  headIsOurs: boolean;
  sessionStatus: string;
  /** Earlier CI failures on this pull request's other head commits, oldest first. */
  earlier: readonly { followUp: boolean; signature: string | null }[];
  signature: string;
}): FollowUpDecision {
  if (!input.headIsOurs)
    return {
      followUp: false,
      reason: 'the failing commit was pushed by someone else, not by me, so I leave the fix to them',
    };
  const made = input.earlier.filter((f) => f.followUp);
  const last = made.at(-1);
  if (last && last.signature === input.signature)
    return { followUp: false, reason: 'the same failure came back after my last attempt to fix it' };
  if (made.length >= maxCiFollowUps)
    return {
      followUp: false,
      reason: `I already made ${maxCiFollowUps} automatic attempts to fix CI on this pull request`,
    };
  if (input.sessionStatus === 'running' || input.sessionStatus === 'queued' || input.sessionStatus === 'waiting') {
    return { followUp: false, reason: `the session is ${input.sessionStatus} with other work` };
  }
  return { followUp: true };
}

export type CollectedFailure = {
  /** Failing jobs or check runs. */
  jobs: { name: string; url?: string; excerpt: string }[];
  /** What stays the same when the same failure repeats on another commit. */
  signature: string;
};

const timestamp = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ?/;
const maxExcerptChars = 4000;
const maxJobs = 3;

/**
 * The part of a GitHub Actions job log that says why it failed: the `##[error]` lines and the last
 * lines, timestamps removed, at most a few KiB.
 */
export function logExcerpt(log: string): { excerpt: string; errors: string[] } {
  const lines = log
    .split(/\r?\n/)
    .map((l) => l.replace(timestamp, ''))
    .filter((l) => !/^##\[(end)?group\]/.test(l));
  while (lines.length && !lines.at(-1)!.trim()) lines.pop();
  const errors = lines.filter((l) => l.startsWith('##[error]')).map((l) => l.slice('##[error]'.length).trim());
  // What the failure says about itself: Actions' `##[error]` lines say only "exit code 1", so the
  // lines that name an error, an assertion or a failure go into the signature too.
  const telling = lines
    .filter((l) => !l.startsWith('##[error]') && /(error|exception|assert|fail|panic)/i.test(l))
    .slice(0, 5)
    .map((l) => l.trim());
  const tail = lines.slice(-60);
  const missing = errors.filter((e) => !tail.some((l) => l.includes(e)));
  let excerpt = [...(missing.length ? [...missing.map((e) => `##[error]${e}`), '…'] : []), ...tail].join('\n');
  if (excerpt.length > maxExcerptChars) excerpt = `…${excerpt.slice(-maxExcerptChars)}`;
  return { excerpt, errors: [...telling, ...errors] };
}

/** A failure's identity across commits: the failing jobs and their error lines, without SHAs and timings. */
export function failureSignature(jobs: readonly { name: string; errors: readonly string[] }[]): string {
  const norm = (s: string) =>
    s
      .replace(/\b[0-9a-f]{7,40}\b/g, '<sha>')
      .replace(/\d+(\.\d+)?\s*(ms|s|sec|seconds)\b/g, '<time>')
      .trim();
  return [...jobs]
    .map((j) => `${j.name}: ${j.errors.map(norm).join(' | ')}`)
    .sort()
    .join('\n');
}

type Octokit = Pick<PatchbayOctokit, 'request'>;

/**
 * Reads why CI failed from the Actions API: the failing jobs of a workflow run (or the check runs
 * of a check suite, or the one check run), and each job's log (GitHub answers the logs call with a
 * redirect to a short-lived download link, which the request follows). Needs Actions: read and
 * Checks: read; without them, the excerpt says so instead of failing the delivery.
 */
export async function collectCiFailure(
  octokit: Octokit,
  report: CiReport,
  signal: AbortSignal,
): Promise<CollectedFailure> {
  const where = { owner: report.owner, repo: report.repo, request: { signal } };
  type Failing = { name: string; url?: string; jobId?: number; output?: string };
  let failing: Failing[] = [];
  if (report.event === 'workflow_run') {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs', {
      ...where,
      run_id: report.id,
      filter: 'latest',
      per_page: 100,
    });
    failing = data.jobs
      .filter((j) => j.conclusion && failedConclusions.has(j.conclusion))
      .map((j) => ({ name: j.name, ...(j.html_url && { url: j.html_url }), jobId: Number(j.id) }));
  } else if (report.event === 'check_suite') {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs', {
      ...where,
      check_suite_id: report.id,
      per_page: 100,
    });
    failing = data.check_runs
      .filter((c) => c.conclusion && failedConclusions.has(c.conclusion))
      .map((c) => ({
        name: c.name,
        ...(c.html_url && { url: c.html_url }),
        ...(c.app?.slug === 'github-actions'
          ? { jobId: Number(c.id) }
          : { output: [c.output.title, c.output.summary, c.output.text].filter(Boolean).join('\n\n') }),
      }));
  } else {
    failing = [
      {
        name: report.name,
        ...(report.url && { url: report.url }),
        ...(report.appSlug === 'github-actions' ? { jobId: report.id } : { output: report.output ?? '' }),
      },
    ];
  }
  if (failing.length === 0) failing = [{ name: report.name, ...(report.url && { url: report.url }), output: '' }];

  const jobs: (CollectedFailure['jobs'][number] & { errors: string[] })[] = [];
  for (const f of failing.slice(0, maxJobs)) {
    let text = f.output ?? '';
    if (f.jobId !== undefined) {
      try {
        const { data } = await octokit.request('GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs', {
          ...where,
          job_id: f.jobId,
        });
        text = typeof data === 'string' ? data : String(data);
      } catch (error) {
        const status = (error as { status?: number }).status;
        // Missing permission or an expired log is a fact to report, not a reason to retry.
        if (status !== 403 && status !== 404 && status !== 410) throw error;
        text = `##[error](the job log could not be read: GitHub answered ${status}${status === 403 ? '; the GitHub App needs the Actions: read permission' : ''})`;
      }
    }
    const { excerpt, errors } = logExcerpt(text || '(no output)');
    jobs.push({ name: f.name, ...(f.url && { url: f.url }), excerpt, errors });
  }
  return { jobs: jobs.map(({ errors: _e, ...j }) => j), signature: failureSignature(jobs) };
}

/** The message the agent gets for a follow-up: what failed where, and the end of each failing job's log. */
export function followUpMessage(input: {
  number: number;
  commit: string;
  failure: CollectedFailure;
  attempt: number;
}): string {
  return [
    `CI failed on pull request #${input.number} at your commit ${input.commit.slice(0, 12)} (the branch's head).`,
    '',
    // The job's name and log are the repository's (its workflows, its tests' output): quoted, fenced
    // so that no log line can close the block and speak as CI.
    ...input.failure.jobs.flatMap((j, i) => [
      fenceUntrusted({
        what: `Failing job ${i + 1}${j.url ? ` (${j.url})` : ''}: its name, then the end of its log`,
        author: "the repository's CI (its workflows and check apps)",
        title: `Job: ${j.name}`,
        body: j.excerpt,
      }),
      '',
    ]),
    `Fix the cause on this branch and finish again; the harness checks your commit again, and CI runs again on the push. This is automatic CI follow-up ${input.attempt} of ${maxCiFollowUps}.`,
  ].join('\n');
}
