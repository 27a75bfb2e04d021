import { z } from 'zod';
import { Installation, Repository, type CiReport, type Classified } from './webhook-payloads.ts';

// Finished CI on a commit: check runs, check suites and workflow runs, as the CI follow-up reads them.

const PullRefs = z.array(
  z.object({ number: z.number(), head: z.object({ sha: z.string() }).passthrough().optional() }).passthrough(),
);
const App = z.object({ slug: z.string().optional() }).passthrough().nullable().optional();
const CheckRunEvent = z.object({
  action: z.string(),
  check_run: z
    .object({
      id: z.number(),
      name: z.string(),
      head_sha: z.string(),
      html_url: z.string().nullable().optional(),
      conclusion: z.string().nullable(),
      output: z
        .object({
          title: z.string().nullable().optional(),
          summary: z.string().nullable().optional(),
          text: z.string().nullable().optional(),
        })
        .passthrough()
        .optional(),
      app: App,
      pull_requests: PullRefs.optional(),
      check_suite: z
        .object({ id: z.number(), head_branch: z.string().nullable().optional(), pull_requests: PullRefs.optional() })
        .passthrough()
        .optional(),
    })
    .passthrough(),
  repository: Repository,
  installation: Installation.optional(),
});
const CheckSuiteEvent = z.object({
  action: z.string(),
  check_suite: z
    .object({
      id: z.number(),
      head_sha: z.string(),
      head_branch: z.string().nullable().optional(),
      conclusion: z.string().nullable(),
      app: App,
      pull_requests: PullRefs.optional(),
    })
    .passthrough(),
  repository: Repository,
  installation: Installation.optional(),
});
const WorkflowRunEvent = z.object({
  action: z.string(),
  workflow_run: z
    .object({
      id: z.number(),
      name: z.string().nullable().optional(),
      head_sha: z.string(),
      head_branch: z.string().nullable().optional(),
      conclusion: z.string().nullable(),
      html_url: z.string().optional(),
      pull_requests: PullRefs.optional(),
      run_attempt: z.number().optional(),
    })
    .passthrough(),
  workflow: z.object({ name: z.string() }).passthrough().nullable().optional(),
  repository: Repository,
  installation: Installation.optional(),
});

/** A completed check run, with its own output for checks that are not Actions jobs. */
export function classifyCheckRun(payload: unknown): Classified {
  const p = CheckRunEvent.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable check_run payload' };
  const run = p.data.check_run;
  if (p.data.action !== 'completed' || !run.conclusion) return { kind: 'ignore', reason: `check_run ${p.data.action}` };
  const output = [run.output?.title, run.output?.summary, run.output?.text].filter(Boolean).join('\n\n');
  return ci(p.data, {
    event: 'check_run',
    id: run.id,
    name: run.name,
    ...(run.html_url && { url: run.html_url }),
    headSha: run.head_sha,
    conclusion: run.conclusion,
    pullNumbers: pullNumbers(run.pull_requests, run.check_suite?.pull_requests),
    ...(run.app?.slug && { appSlug: run.app.slug }),
    ...(output && { output }),
  });
}

/** A completed check suite. */
export function classifyCheckSuite(payload: unknown): Classified {
  const p = CheckSuiteEvent.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable check_suite payload' };
  const suite = p.data.check_suite;
  if (p.data.action !== 'completed' || !suite.conclusion)
    return { kind: 'ignore', reason: `check_suite ${p.data.action}` };
  return ci(p.data, {
    event: 'check_suite',
    id: suite.id,
    name: suite.app?.slug ? `${suite.app.slug} check suite` : 'check suite',
    headSha: suite.head_sha,
    conclusion: suite.conclusion,
    pullNumbers: pullNumbers(suite.pull_requests),
    ...(suite.app?.slug && { appSlug: suite.app.slug }),
  });
}

/** A completed workflow run (GitHub Actions). */
export function classifyWorkflowRun(payload: unknown): Classified {
  const p = WorkflowRunEvent.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable workflow_run payload' };
  const run = p.data.workflow_run;
  if (p.data.action !== 'completed' || !run.conclusion)
    return { kind: 'ignore', reason: `workflow_run ${p.data.action}` };
  return ci(p.data, {
    event: 'workflow_run',
    id: run.id,
    name: run.name || p.data.workflow?.name || `workflow run ${run.id}`,
    ...(run.html_url && { url: run.html_url }),
    headSha: run.head_sha,
    conclusion: run.conclusion,
    pullNumbers: pullNumbers(run.pull_requests),
    appSlug: 'github-actions',
  });
}

function pullNumbers(...lists: (z.infer<typeof PullRefs> | undefined)[]): number[] {
  return [...new Set(lists.flatMap((list) => (list ?? []).map((p) => p.number)))];
}

function ci(
  payload: { repository: z.infer<typeof Repository>; installation?: { id: number } | undefined },
  report: Omit<CiReport, 'installationId' | 'owner' | 'repo'>,
): Classified {
  if (!payload.installation) return { kind: 'ignore', reason: 'delivery without an installation (not an App webhook)' };
  return {
    kind: 'ci',
    report: {
      ...report,
      installationId: payload.installation.id,
      owner: payload.repository.owner.login,
      repo: payload.repository.name,
    },
  };
}
