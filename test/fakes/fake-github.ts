import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import {
  createPublicKey,
  createVerify,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  type KeyObject,
} from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { serveGit, workflowsHook } from './fake-github-git.ts';
import type { Chaos } from './chaos.ts';
import { answerSlowly, dropBeforeAnswer, networkFault } from './chaos-faults.ts';
import { githubChaosFault, githubGitChaosFault, githubGraphQLChaosFault } from './fake-github-chaos.ts';
import { createHookDeliveries } from './fake-github-deliveries.ts';
import { loadGitHubSpec } from './fake-github-openapi.ts';
import { runGitHubGraphQL } from './fake-github-graphql.ts';
import { answerHistory, type BranchRule, pageOf, sortPulls } from './fake-github-history.ts';
import { answerPolling, conditional, pollingLog } from './fake-github-polling.ts';
import { listenOnLoopback } from './loopback.ts';

const run = promisify(execFile);

export type Permission = 'admin' | 'maintain' | 'write' | 'triage' | 'read';
type User = { login: string; id: number; type: 'User' | 'Bot' };
type Level = 'read' | 'write';
type Token =
  | {
      kind: 'installation';
      installationId: number;
      repos: string[] | 'all';
      permissions: Record<string, Level>;
      expiresAt: number;
    }
  | { kind: 'user'; login: string };

/** What the App itself was granted: an installation token can have these or fewer. */
const DEFAULT_APP_PERMISSIONS: Record<string, Level> = {
  contents: 'write',
  issues: 'write',
  pull_requests: 'write',
  statuses: 'write',
  metadata: 'read',
  checks: 'read',
  actions: 'read',
};

/** GitHub's documented example bodies (@octokit/openapi components.examples), the templates for jobs and check runs. */
const specExamples = (
  createRequire(import.meta.url)('@octokit/openapi/generated/api.github.com.json') as {
    components: { examples: Record<string, { value: unknown }> };
  }
).components.examples;

/**
 * The installation-token permission each REST operation needs (GitHub's "Permissions required for
 * GitHub Apps" reference). `issue-or-pull` operations on a pull request's number need
 * pull_requests, on an issue's number issues (either is accepted for a PR conversation).
 */
const NEEDS: Record<string, { permission: string | 'issue-or-pull'; level: Level }> = {
  'repos/get-collaborator-permission-level': { permission: 'metadata', level: 'read' },
  'repos/create-commit-status': { permission: 'statuses', level: 'write' },
  'reactions/create-for-issue-comment': { permission: 'issue-or-pull', level: 'write' },
  'reactions/create-for-issue': { permission: 'issue-or-pull', level: 'write' },
  'reactions/create-for-pull-request-review-comment': { permission: 'pull_requests', level: 'write' },
  'issues/create-comment': { permission: 'issue-or-pull', level: 'write' },
  'issues/list-comments': { permission: 'issue-or-pull', level: 'read' },
  'issues/update-comment': { permission: 'issue-or-pull', level: 'write' },
  'pulls/create-reply-for-review-comment': { permission: 'pull_requests', level: 'write' },
  'pulls/update-review-comment': { permission: 'pull_requests', level: 'write' },
  'pulls/list': { permission: 'pull_requests', level: 'read' },
  'pulls/get': { permission: 'pull_requests', level: 'read' },
  'pulls/list-reviews': { permission: 'pull_requests', level: 'read' },
  'pulls/create': { permission: 'pull_requests', level: 'write' },
  'pulls/update': { permission: 'pull_requests', level: 'write' },
  'actions/list-jobs-for-workflow-run': { permission: 'actions', level: 'read' },
  'actions/download-job-logs-for-workflow-run': { permission: 'actions', level: 'read' },
  'checks/list-for-suite': { permission: 'checks', level: 'read' },
  'repos/get-combined-status-for-ref': { permission: 'statuses', level: 'read' },
  'checks/list-for-ref': { permission: 'checks', level: 'read' },
  'checks/list-suites-for-ref': { permission: 'checks', level: 'read' },
  'issues/list-comments-for-repo': { permission: 'issues', level: 'read' },
  'issues/get': { permission: 'issue-or-pull', level: 'read' },
  'pulls/list-review-comments-for-repo': { permission: 'pull_requests', level: 'read' },
  'pulls/list-review-comments': { permission: 'pull_requests', level: 'read' },
  'repos/get-branch-rules': { permission: 'metadata', level: 'read' },
  'repos/get-branch-protection': { permission: 'administration', level: 'read' },
};

const grants = (have: Level | undefined, need: Level) => have === 'write' || (have === 'read' && need === 'read');
type Comment = {
  id: number;
  repo: string;
  number: number;
  body: string;
  user: User;
  reactions: string[];
  /** GitHub's author_association: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, … */
  association?: string;
  /** When it was posted and last edited (ISO), as GitHub's lists filter and sort them. */
  createdAt: string;
  updatedAt: string;
};
type ReviewComment = Comment & { path: string; line: number; diff_hunk: string; in_reply_to_id?: number };
type Review = { id: number; user: User; state: string; body: string; submittedAt: string };
type Pull = {
  number: number;
  repo: string;
  title: string;
  body: string;
  head: string;
  headRepo: string;
  base: string;
  draft: boolean;
  state: 'open' | 'closed';
  user: User;
  /** Set when it was merged: the merge commit on the base branch, who merged it and when. */
  merged?: { sha: string; by: User; at: string };
  closedAt?: string;
  reviews?: Review[];
  /** A closed pull request's head commit once its branch is gone (the repository's history). */
  closedHead?: string;
  labels?: string[];
};
type Job = {
  id: number;
  runId: number;
  name: string;
  conclusion: 'success' | 'failure' | 'cancelled' | 'skipped';
  log: string;
};
type WorkflowRun = {
  id: number;
  repo: string;
  name: string;
  headSha: string;
  headBranch: string;
  checkSuiteId: number;
  jobs: Job[];
};
type CheckRunRecord = {
  id: number;
  repo: string;
  suiteId: number;
  name: string;
  headSha: string;
  conclusion: string;
  appSlug: string;
  output: { title: string | null; summary: string | null; text: string | null };
};
type Repo = {
  owner: string;
  name: string;
  id: number;
  installationId: number;
  gitDir: string;
  collaborators: Map<string, Permission>;
  /** False for a private repository on the Free or Pro plan: GitHub refuses draft pull requests there. */
  drafts: boolean;
};

export type FakeGitHub = Awaited<ReturnType<typeof startFakeGitHub>>;

/**
 * A loopback GitHub: REST under `/api/v3` (like GitHub Enterprise), git over smart HTTP and OAuth at
 * the root (like github.com). It checks the App JWT (RS256, iss, exp - iat <= 600), validates every
 * REST call against GitHub's published OpenAPI description, enforces installation-token scope and
 * expiry, and serves repositories with the real `git http-backend` behind a Basic auth challenge.
 * Everything it refused is kept in `refused`, so a test can assert nothing was malformed.
 */
export async function startFakeGitHub(
  options: {
    appId?: number;
    slug?: string;
    tokenTtlMs?: number;
    appPermissions?: Record<string, Level>;
    /** Transient faults at a rate on REST, GraphQL and git (fake-github-chaos.ts), recorded in the chaos, not in `refused`. */
    chaos?: Chaos;
  } = {},
) {
  const APP_PERMISSIONS = options.appPermissions ?? DEFAULT_APP_PERMISSIONS;
  const appId = options.appId ?? 4242;
  const slug = options.slug ?? 'patchbay-test';
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const verifyKey: KeyObject = createPublicKey(publicKey);
  const spec = loadGitHubSpec();
  const root = await mkdtemp(join(tmpdir(), 'fake-github-'));
  const bot: User = { login: `${slug}[bot]`, id: 9_000_001, type: 'Bot' };
  const users = new Map<string, User>();
  /** Organization login → its members' logins, with their membership state. */
  const orgMembers = new Map<string, Map<string, 'active' | 'pending'>>();
  const repos = new Map<string, Repo>();
  const tokens = new Map<string, Token>();
  const oauthCodes = new Map<string, string>();
  const comments = new Map<number, Comment>();
  const reviewComments = new Map<number, ReviewComment>();
  const pulls: Pull[] = [];
  const issueReactions: { repo: string; number: number; content: string }[] = [];
  const refused: { method: string; path: string; status: number; message: string }[] = [];
  /** Draft pull requests refused by a repository's plan (GitHub's 422, answered as GitHub does). */
  const draftRefusals: { repo: string; head: string }[] = [];
  /** Operations answered with an error until cleared (an App that lost a permission, an outage). */
  const failures = new Map<string, { status: number; message: string }>();
  /** Operations done and then left unanswered, the connection dropped (the answer is lost), by count. */
  const drops = new Map<string, number>();
  const dropping = new WeakMap<ServerResponse, string>();
  const workflowRuns: WorkflowRun[] = [];
  const checkRuns: CheckRunRecord[] = [];
  /** Short-lived log download links (GitHub answers the job-logs call with a 302 to one). */
  const logLinks = new Map<string, { jobId: number; expiresAt: number }>();
  const logDownloads: { jobId: number; authorization: boolean }[] = [];
  // Pictures people attached to issues and comments (user-attachments links on the GitHub host).
  const attachments = new Map<string, { bytes: Uint8Array; mediaType: string }>();
  const attachmentDownloads: { path: string; served: boolean }[] = [];
  const calls: { method: string; path: string; operationId: string; as: string }[] = [];
  const issuedTokens: string[] = [];
  const gitRequests: { path: string; user: string; service: string }[] = [];
  const statuses: {
    repo: string;
    sha: string;
    state: string;
    context: string;
    target_url?: string;
    description?: string;
    as: string;
  }[] = [];
  const graphqlCalls: { operations: string[]; as: string }[] = [];
  /** The rules of a repository's rulesets that apply to a branch (`owner/repo:branch`), as GET …/rules/branches/{branch} answers. */
  const branchRules = new Map<string, BranchRule[]>();
  let nextId = 1000;
  const deliveries = createHookDeliveries(() => nextId++);
  const oauthClient = { id: 'Iv1.fakeclient', secret: 'fake-client-secret' };
  /** Something another actor does on GitHub at a given moment (a merge queue merging the branch). */
  const hooks: {
    beforePullCreate?: ((pr: { gitDir: string; head: string; base: string }) => Promise<void>) | undefined;
    /** Runs after a GraphQL request's mutations and before its answer (say, a push that lands meanwhile). */
    afterGraphql?: ((operations: readonly string[]) => Promise<void>) | undefined;
    /** Runs after an issue comment is made and before its answer (say, the caller's database goes away). */
    afterCommentCreate?: (() => void) | undefined;
  } = {};

  const key = (owner: string, name: string) => `${owner}/${name}`.toLowerCase();

  function send(res: ServerResponse, status: number, body?: unknown): void {
    const dropped = dropping.get(res);
    if (dropped && status < 300) {
      // Done, and the answer never arrives: the connection goes away before a byte of it.
      drops.set(dropped, (drops.get(dropped) ?? 1) - 1);
      res.socket?.destroy();
      return;
    }
    res.statusCode = status;
    if (body === undefined) {
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/json; charset=utf-8');
    // GitHub's ETag on every GET, and a 304 with no body for a matching If-None-Match.
    const text = JSON.stringify(body);
    if (status === 200 && res.req?.method === 'GET' && conditional(res.req, res, text, polling)) return;
    res.end(text);
  }

  function refuse(req: IncomingMessage, res: ServerResponse, status: number, message: string): void {
    refused.push({ method: req.method ?? '', path: req.url ?? '', status, message });
    send(res, status, { message, documentation_url: 'https://docs.github.com/rest' });
  }

  function verifyJwt(token: string): string | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return 'not a JWT';
    const [h, p, s] = parts as [string, string, string];
    const header = JSON.parse(Buffer.from(h, 'base64url').toString());
    if (header.alg !== 'RS256') return `alg ${header.alg} is not RS256`;
    const verifier = createVerify('RSA-SHA256');
    verifier.update(`${h}.${p}`);
    if (!verifier.verify(verifyKey, Buffer.from(s, 'base64url'))) return 'bad JWT signature';
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { iat: number; exp: number; iss: unknown };
    const now = Math.floor(Date.now() / 1000);
    if (String(claims.iss) !== String(appId)) return `iss ${claims.iss} is not the App ID`;
    if (claims.exp - claims.iat > 600) return "'Expiration time' claim ('exp') is too far in the future";
    if (claims.exp <= now)
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time";
    if (claims.iat > now + 60) return "'Issued at' claim ('iat') must be an Integer representing a time in the past";
    return undefined;
  }

  function tokenOf(
    req: IncomingMessage,
  ): { token: string; auth: Token } | { jwt: true } | { error: string } | undefined {
    const header = req.headers.authorization;
    if (!header) return undefined;
    const [scheme, value] = header.split(' ', 2) as [string, string | undefined];
    if (!value) return { error: 'malformed authorization' };
    if (value.split('.').length === 3 && scheme.toLowerCase() === 'bearer') {
      const problem = verifyJwt(value);
      return problem ? { error: problem } : { jwt: true };
    }
    if (!['token', 'bearer'].includes(scheme.toLowerCase())) return { error: `unknown scheme ${scheme}` };
    const auth = tokens.get(value);
    if (!auth) return { error: 'Bad credentials' };
    if (auth.kind === 'installation' && auth.expiresAt < Date.now())
      return { error: 'Bad credentials (token expired)' };
    return { token: value, auth };
  }

  /** Whether the token reaches the repository at all (a user sees repos they collaborate on). */
  function canSeeRepo(auth: Token, repo: Repo): boolean {
    if (auth.kind === 'user') return repo.collaborators.has(auth.login);
    if (auth.installationId !== repo.installationId) return false;
    return auth.repos === 'all' || auth.repos.includes(repo.name.toLowerCase());
  }

  /** A user writes where they have write access; an installation token by its permissions. */
  function mayUse(auth: Token, repo: Repo, permission: string, level: Level): boolean {
    if (!canSeeRepo(auth, repo)) return false;
    if (auth.kind === 'user')
      return level === 'read' || ['admin', 'maintain', 'write'].includes(repo.collaborators.get(auth.login)!);
    return grants(auth.permissions[permission], level);
  }

  async function readBody(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  function userOf(auth: Token): User {
    return auth.kind === 'installation' ? bot : users.get(auth.login)!;
  }

  const htmlBase = () => `http://127.0.0.1:${port}`;
  /** GitHub's timestamps: ISO 8601 to the second. */
  const stamp = () => {
    const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    return { createdAt: at, updatedAt: at };
  };
  /** What the polling endpoints were asked, and how many answers were 304s. */
  const polling = pollingLog();
  const commentJson = (c: Comment) => ({
    id: c.id,
    node_id: `IC_${c.id}`,
    body: c.body,
    user: c.user,
    html_url: `${htmlBase()}/${c.repo}/issues/${c.number}#issuecomment-${c.id}`,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
    issue_url: `${htmlBase()}/api/v3/repos/${c.repo}/issues/${c.number}`,
    author_association: c.association ?? 'NONE',
  });
  const pullJson = (p: Pull) => ({
    id: p.number + 50_000,
    number: p.number,
    state: p.state,
    title: p.title,
    body: p.body,
    draft: p.draft,
    user: p.user,
    html_url: `${htmlBase()}/${p.repo}/pull/${p.number}`,
    node_id: `PR_kw${p.number}`,
    merged: p.merged !== undefined,
    merged_at: p.merged?.at ?? null,
    merged_by: p.merged?.by ?? null,
    merge_commit_sha: p.merged?.sha ?? null,
    closed_at: p.closedAt ?? null,
    head: { ref: p.head, sha: headSha.get(p) ?? p.closedHead ?? '0'.repeat(40), repo: { full_name: p.headRepo } },
    labels: (p.labels ?? []).map((name, i) => ({
      id: i + 1,
      node_id: `LA_${i + 1}`,
      name,
      color: 'ededed',
      default: false,
    })),
    base: { ref: p.base, sha: '0'.repeat(40), repo: { full_name: p.repo } },
  });

  const jobJson = (run: WorkflowRun, j: Job) => {
    const template = structuredClone(specExamples.job!.value) as Record<string, unknown>;
    return {
      ...template,
      id: j.id,
      run_id: run.id,
      run_url: `${htmlBase()}/api/v3/repos/${run.repo}/actions/runs/${run.id}`,
      node_id: `J_${j.id}`,
      head_sha: run.headSha,
      head_branch: run.headBranch,
      url: `${htmlBase()}/api/v3/repos/${run.repo}/actions/jobs/${j.id}`,
      html_url: `${htmlBase()}/${run.repo}/actions/runs/${run.id}/job/${j.id}`,
      status: 'completed',
      conclusion: j.conclusion,
      name: j.name,
      workflow_name: run.name,
      check_run_url: `${htmlBase()}/api/v3/repos/${run.repo}/check-runs/${j.id}`,
      steps: [
        {
          name: 'Set up job',
          status: 'completed',
          conclusion: 'success',
          number: 1,
          started_at: '2026-01-01T00:00:00Z',
          completed_at: '2026-01-01T00:00:01Z',
        },
        {
          name: `Run ${j.name}`,
          status: 'completed',
          conclusion: j.conclusion,
          number: 2,
          started_at: '2026-01-01T00:00:01Z',
          completed_at: '2026-01-01T00:00:09Z',
        },
      ],
    };
  };
  const checkRunJson = (c: CheckRunRecord) => {
    const template = structuredClone(specExamples['check-run']!.value) as Record<string, unknown>;
    return {
      ...template,
      id: c.id,
      node_id: `CR_${c.id}`,
      head_sha: c.headSha,
      external_id: '',
      url: `${htmlBase()}/api/v3/repos/${c.repo}/check-runs/${c.id}`,
      html_url: `${htmlBase()}/${c.repo}/runs/${c.id}`,
      details_url: `${htmlBase()}/${c.repo}/runs/${c.id}`,
      status: 'completed',
      conclusion: c.conclusion,
      name: c.name,
      output: {
        ...c.output,
        annotations_count: 0,
        annotations_url: `${htmlBase()}/api/v3/repos/${c.repo}/check-runs/${c.id}/annotations`,
      },
      check_suite: { id: c.suiteId },
      app: { ...((template.app as Record<string, unknown>) ?? {}), slug: c.appSlug },
      pull_requests: [],
    };
  };

  /** The download behind the job-logs redirect: a signed, short-lived link, as GitHub's blob storage serves it. */
  function blob(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const m = /^\/_blob\/job-logs\/(\d+)$/.exec(url.pathname);
    const link = logLinks.get(url.searchParams.get('sig') ?? '');
    if (req.method !== 'GET' || !m || !link || link.jobId !== Number(m[1]) || link.expiresAt < Date.now()) {
      refuse(req, res, 403, 'AuthenticationFailed: the signature is not valid or has expired');
      return;
    }
    const job = workflowRuns.flatMap((r) => r.jobs).find((j) => j.id === link.jobId)!;
    logDownloads.push({ jobId: job.id, authorization: req.headers.authorization !== undefined });
    res.statusCode = 200;
    res.setHeader('content-type', 'text/plain; charset=utf-8');
    res.end(job.log);
  }

  /** A user-attachments picture: served to a live installation token only (a private repository's image). */
  function attachment(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const file = attachments.get(url.pathname);
    const token = /^(?:token|Bearer) (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const auth = token ? tokens.get(token) : undefined;
    const served =
      req.method === 'GET' && Boolean(file) && auth?.kind === 'installation' && auth.expiresAt > Date.now();
    attachmentDownloads.push({ path: url.pathname, served });
    if (!served || !file) {
      refuse(req, res, file ? 401 : 404, file ? 'Requires authentication' : 'Not Found');
      return;
    }
    res.writeHead(200, { 'content-type': file.mediaType, 'content-length': String(file.bytes.byteLength) });
    res.end(Buffer.from(file.bytes));
  }

  // Head SHAs are read from git just before a pull is serialised (pullJson stays synchronous).
  const headSha = new WeakMap<Pull, string>();
  async function refreshHeads(list: Pull[]): Promise<void> {
    for (const p of list) {
      const r = repos.get(p.headRepo);
      if (!r) continue;
      try {
        headSha.set(
          p,
          (
            await run('git', ['--git-dir', r.gitDir, 'rev-parse', '--verify', '--quiet', `refs/heads/${p.head}`])
          ).stdout.trim(),
        );
      } catch {
        headSha.delete(p);
      }
    }
  }

  async function commitExists(repo: Repo, sha: string): Promise<boolean> {
    try {
      await run('git', ['--git-dir', repo.gitDir, 'cat-file', '-e', `${sha}^{commit}`]);
      return true;
    } catch {
      return false;
    }
  }

  async function graphqlRoute(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') return refuse(req, res, 404, 'Not Found');
    const raw = await readBody(req);
    let body: { query?: unknown; variables?: unknown };
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return refuse(req, res, 400, 'Problems parsing JSON');
    }
    const who = tokenOf(req);
    if (!who || 'error' in who || 'jwt' in who)
      return refuse(req, res, 401, 'This endpoint requires you to be authenticated.');
    const auth = who.auth;
    const chaos = githubGraphQLChaosFault(options.chaos);
    if (chaos?.kind === 'dropped') return dropBeforeAnswer(res);
    if (chaos?.kind === 'slow') await answerSlowly(options.chaos!, 'github', 'graphql');
    if (chaos?.kind === 'answer') {
      for (const [name, value] of Object.entries(chaos.headers)) res.setHeader(name, value);
      return send(res, chaos.status, chaos.body);
    }
    const operations: string[] = [];
    const setDraft = (draft: boolean) => (input: Record<string, unknown>) => {
      operations.push(draft ? 'convertPullRequestToDraft' : 'markPullRequestReadyForReview');
      const p = pulls.find((x) => `PR_kw${x.number}` === input.pullRequestId);
      const repo = p && repos.get(p.repo);
      if (!p || !repo || !canSeeRepo(auth, repo))
        throw new Error(`Could not resolve to a node with the global id of '${String(input.pullRequestId)}'`);
      if (!mayUse(auth, repo, 'pull_requests', 'write')) throw new Error('Resource not accessible by integration');
      if (p.state !== 'open') throw new Error('Pull request is closed');
      if (draft && !repo.drafts) throw new Error('Draft pull requests are not supported in this repository.');
      if (p.draft === draft) throw new Error(draft ? 'Pull request is already a draft' : 'Pull request is not a draft');
      p.draft = draft;
      return {
        clientMutationId: input.clientMutationId ?? null,
        pullRequest: {
          id: `PR_kw${p.number}`,
          number: p.number,
          isDraft: p.draft,
          url: `${htmlBase()}/${p.repo}/pull/${p.number}`,
        },
      };
    };
    const answer = await runGitHubGraphQL(body, {
      markPullRequestReadyForReview: setDraft(false),
      convertPullRequestToDraft: setDraft(true),
    });
    graphqlCalls.push({ operations, as: auth.kind === 'user' ? auth.login : bot.login });
    await hooks.afterGraphql?.(operations);
    if (answer.body.errors?.length)
      refused.push({
        method: 'POST',
        path: '/api/graphql',
        status: answer.status,
        message: answer.body.errors.map((e) => e.message).join('; '),
      });
    return send(res, answer.status, answer.body);
  }

  async function commitsAhead(repo: Repo, base: string, head: string): Promise<number> {
    const { stdout } = await run('git', [
      '--git-dir',
      repo.gitDir,
      'rev-list',
      '--count',
      `refs/heads/${base}..refs/heads/${head}`,
    ]);
    return Number(stdout.trim());
  }

  async function branchExists(repo: Repo, branch: string): Promise<boolean> {
    try {
      await run('git', ['--git-dir', repo.gitDir, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]);
      return true;
    } catch {
      return false;
    }
  }

  async function api(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.slice('/api/v3'.length) || '/';
    const raw = await readBody(req);
    let body: Record<string, unknown> | undefined;
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return refuse(req, res, 400, 'Problems parsing JSON');
      }
    }
    const checked = spec.check(req.method ?? 'GET', path, url.searchParams, body);
    if (!checked.ok) return refuse(req, res, checked.status, checked.message);
    const { operationId, params } = checked.match;
    const who = tokenOf(req);
    if (!who) return refuse(req, res, 401, 'Requires authentication');
    if ('error' in who) return refuse(req, res, 401, who.error);
    const appOnly = [
      'apps/list-webhook-deliveries',
      'apps/redeliver-webhook-delivery',
      'apps/get-authenticated',
      'apps/list-installations',
      'apps/create-installation-access-token',
      'apps/get-repo-installation',
    ];
    if ('jwt' in who !== appOnly.includes(operationId)) {
      return refuse(
        req,
        res,
        'jwt' in who ? 403 : 401,
        'jwt' in who
          ? 'A JSON web token cannot be used to authenticate to this endpoint'
          : 'A JSON web token is required for this endpoint',
      );
    }
    calls.push({
      method: req.method!,
      path,
      operationId,
      as: 'jwt' in who ? 'app' : who.auth.kind === 'user' ? who.auth.login : bot.login,
    });
    const repo = params.owner && params.repo ? repos.get(key(params.owner, params.repo)) : undefined;
    if (params.owner && params.repo && !repo) return refuse(req, res, 404, 'Not Found');
    const auth = 'jwt' in who ? undefined : who.auth;
    if (repo && auth && !canSeeRepo(auth, repo)) return refuse(req, res, 404, 'Not Found');
    const num = (name: string) => Number(params[name]);
    const failure = failures.get(operationId);
    if (failure) return refuse(req, res, failure.status, failure.message);
    if ((drops.get(operationId) ?? 0) > 0) dropping.set(res, operationId);
    const subject = params.owner && params.repo ? `${params.owner}/${params.repo}` : undefined;
    const chaos = githubChaosFault(options.chaos, req.method ?? 'GET', operationId, subject);
    if (chaos?.kind === 'drop-after-accept') dropping.set(res, operationId);
    if (!chaos && (await networkFault(options.chaos, 'github', operationId, subject))) return dropBeforeAnswer(res);
    if (chaos?.kind === 'answer') {
      for (const [name, value] of Object.entries(chaos.headers)) res.setHeader(name, value);
      return send(res, chaos.status, chaos.body);
    }
    const need = NEEDS[operationId];
    if (repo && auth && need) {
      const issueNumber =
        params.issue_number ??
        (operationId === 'reactions/create-for-issue-comment' || operationId === 'issues/update-comment'
          ? String(comments.get(num('comment_id'))?.number)
          : undefined);
      const isPull =
        issueNumber !== undefined &&
        pulls.some((p) => p.repo === key(repo.owner, repo.name) && p.number === Number(issueNumber));
      const permissions =
        need.permission === 'issue-or-pull' ? (isPull ? ['pull_requests', 'issues'] : ['issues']) : [need.permission];
      if (!permissions.some((permission) => mayUse(auth, repo, permission, need.level))) {
        return refuse(req, res, 403, 'Resource not accessible by integration');
      }
    }

    switch (operationId) {
      case 'apps/get-authenticated':
        return send(res, 200, {
          id: appId,
          slug,
          name: 'Patchbay Test',
          owner: { login: 'octo-org', id: 1, type: 'Organization' },
          permissions: APP_PERMISSIONS,
          events: [],
        });
      case 'apps/list-webhook-deliveries': {
        const page = deliveries.list(
          Number(url.searchParams.get('per_page') ?? 30),
          url.searchParams.get('cursor'),
          new URL(`${htmlBase()}${req.url}`),
        );
        if (page.link) res.setHeader('link', page.link);
        return send(res, 200, page.items);
      }
      case 'apps/redeliver-webhook-delivery':
        return deliveries.redeliver(num('delivery_id')) ? send(res, 202, {}) : refuse(req, res, 404, 'Not Found');
      case 'apps/list-installations': {
        const ids = [...new Set([...repos.values()].map((r) => r.installationId))];
        const ownerOf = (id: number) => [...repos.values()].find((r) => r.installationId === id)!.owner;
        return send(
          res,
          200,
          ids.map((id) => ({
            id,
            account: { login: ownerOf(id), id: 1, type: 'Organization' },
            app_id: appId,
            target_type: 'Organization',
            permissions: APP_PERMISSIONS,
            repository_selection: 'selected',
            events: [],
          })),
        );
      }
      case 'apps/get-repo-installation':
        return send(res, 200, {
          id: repo!.installationId,
          account: { login: repo!.owner, id: 1, type: 'Organization' },
          app_id: appId,
          repository_selection: 'selected',
        });
      case 'apps/create-installation-access-token': {
        const installationId = num('installation_id');
        const mine = [...repos.values()].filter((r) => r.installationId === installationId);
        if (mine.length === 0) return refuse(req, res, 404, 'Not Found');
        const names = (body?.repositories as string[] | undefined)?.map((n) => n.toLowerCase());
        if (names?.some((n) => !mine.some((r) => r.name.toLowerCase() === n)))
          return refuse(
            req,
            res,
            422,
            'There is at least one repository that does not exist or is not accessible to the parent installation.',
          );
        const token = `ghs_${randomBytes(18).toString('base64url')}`;
        const expiresAt = Date.now() + (options.tokenTtlMs ?? 3_600_000);
        const asked = body?.permissions as Record<string, string> | undefined;
        const beyond = Object.entries(asked ?? {}).find(
          ([name, level]) => (level !== 'read' && level !== 'write') || !grants(APP_PERMISSIONS[name], level as Level),
        );
        if (beyond)
          return refuse(
            req,
            res,
            422,
            `The permissions requested are not granted to this installation: ${beyond[0]}=${beyond[1]}`,
          );
        // Metadata read comes with every token.
        const permissions: Record<string, Level> = asked
          ? { ...(asked as Record<string, Level>), metadata: 'read' }
          : { ...APP_PERMISSIONS };
        tokens.set(token, { kind: 'installation', installationId, repos: names ?? 'all', permissions, expiresAt });
        issuedTokens.push(token);
        return send(res, 201, {
          token,
          expires_at: new Date(expiresAt).toISOString().replace(/\.\d+Z$/, 'Z'),
          permissions,
          repository_selection: names ? 'selected' : 'all',
        });
      }
      case 'repos/get-collaborator-permission-level': {
        const user = users.get(params.username!);
        if (!user) return refuse(req, res, 404, 'Not Found');
        const perm = repo!.collaborators.get(user.login);
        const permission = perm === 'maintain' ? 'write' : perm === 'triage' ? 'read' : (perm ?? 'none');
        return send(res, 200, { permission, role_name: perm ?? 'none', user });
      }
      case 'reactions/create-for-issue-comment':
      case 'reactions/create-for-pull-request-review-comment': {
        const target =
          operationId === 'reactions/create-for-issue-comment'
            ? comments.get(num('comment_id'))
            : reviewComments.get(num('comment_id'));
        if (!target || target.repo !== key(repo!.owner, repo!.name)) return refuse(req, res, 404, 'Not Found');
        target.reactions.push(String(body!.content));
        return send(res, 201, {
          id: nextId++,
          content: body!.content,
          user: userOf(auth!),
          created_at: new Date().toISOString(),
        });
      }
      case 'reactions/create-for-issue': {
        issueReactions.push({
          repo: key(repo!.owner, repo!.name),
          number: num('issue_number'),
          content: String(body!.content),
        });
        return send(res, 201, {
          id: nextId++,
          content: body!.content,
          user: userOf(auth!),
          created_at: new Date().toISOString(),
        });
      }
      case 'issues/create-comment': {
        const c: Comment = {
          ...stamp(),
          id: nextId++,
          repo: key(repo!.owner, repo!.name),
          number: num('issue_number'),
          body: String(body!.body),
          user: userOf(auth!),
          reactions: [],
        };
        comments.set(c.id, c);
        hooks.afterCommentCreate?.();
        return send(res, 201, commentJson(c));
      }
      case 'issues/list-comments': {
        const perPage = Number(url.searchParams.get('per_page') ?? 30);
        const page = Number(url.searchParams.get('page') ?? 1);
        const list = [...comments.values()].filter(
          (c) => c.repo === key(repo!.owner, repo!.name) && c.number === num('issue_number'),
        );
        return send(res, 200, list.slice((page - 1) * perPage, page * perPage).map(commentJson));
      }
      case 'issues/update-comment': {
        const c = comments.get(num('comment_id'));
        if (!c || c.repo !== key(repo!.owner, repo!.name)) return refuse(req, res, 404, 'Not Found');
        if (c.user.login !== userOf(auth!).login)
          return refuse(req, res, 403, 'Resource not accessible by integration');
        c.body = String(body!.body);
        return send(res, 200, commentJson(c));
      }
      case 'pulls/list-review-comments': {
        const perPage = Number(url.searchParams.get('per_page') ?? 30);
        const page = Number(url.searchParams.get('page') ?? 1);
        const list = [...reviewComments.values()].filter(
          (c) => c.repo === key(repo!.owner, repo!.name) && c.number === num('pull_number'),
        );
        return send(
          res,
          200,
          list.slice((page - 1) * perPage, page * perPage).map((c) => ({
            ...commentJson(c),
            path: c.path,
            line: c.line,
            diff_hunk: c.diff_hunk,
            ...(c.in_reply_to_id !== undefined && { in_reply_to_id: c.in_reply_to_id }),
            pull_request_review_id: 1,
          })),
        );
      }
      case 'pulls/create-reply-for-review-comment': {
        const parent = reviewComments.get(num('comment_id'));
        if (!parent || parent.number !== num('pull_number')) return refuse(req, res, 404, 'Not Found');
        if (parent.in_reply_to_id !== undefined) return refuse(req, res, 422, 'Replies to replies are not supported');
        const c: ReviewComment = {
          ...parent,
          ...stamp(),
          id: nextId++,
          body: String(body!.body),
          user: userOf(auth!),
          reactions: [],
          in_reply_to_id: parent.id,
        };
        reviewComments.set(c.id, c);
        return send(res, 201, {
          ...commentJson(c),
          path: c.path,
          line: c.line,
          diff_hunk: c.diff_hunk,
          in_reply_to_id: parent.id,
          pull_request_review_id: 1,
        });
      }
      case 'pulls/update-review-comment': {
        const c = reviewComments.get(num('comment_id'));
        if (!c || c.user.login !== userOf(auth!).login) return refuse(req, res, 404, 'Not Found');
        c.body = String(body!.body);
        return send(res, 200, { ...commentJson(c), path: c.path, diff_hunk: c.diff_hunk, pull_request_review_id: 1 });
      }
      case 'repos/create-commit-status': {
        if (!(await commitExists(repo!, params.sha!)))
          return refuse(req, res, 422, `No commit found for SHA: ${params.sha}`);
        const status = {
          repo: key(repo!.owner, repo!.name),
          sha: params.sha!,
          state: String(body!.state),
          context: String(body!.context ?? 'default'),
          ...(typeof body!.target_url === 'string' && { target_url: body!.target_url }),
          ...(typeof body!.description === 'string' && { description: body!.description }),
          as: userOf(auth!).login,
        };
        statuses.push(status);
        return send(res, 201, {
          id: nextId++,
          node_id: `SC_${nextId}`,
          url: '',
          state: status.state,
          context: status.context,
          description: status.description ?? null,
          target_url: status.target_url ?? null,
          creator: userOf(auth!),
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        });
      }
      case 'pulls/list': {
        const head = url.searchParams.get('head');
        const state = url.searchParams.get('state') ?? 'open';
        const list = pulls.filter(
          (p) =>
            p.repo === key(repo!.owner, repo!.name) &&
            (state === 'all' || p.state === state) &&
            (!head || `${p.headRepo.split('/')[0]}:${p.head}`.toLowerCase() === head.toLowerCase()),
        );
        await refreshHeads(list);
        return send(res, 200, pageOf(sortPulls(list, url.searchParams), url.searchParams).map(pullJson));
      }
      case 'pulls/get': {
        const p = pulls.find((x) => x.repo === key(repo!.owner, repo!.name) && x.number === num('pull_number'));
        if (p) await refreshHeads([p]);
        return p ? send(res, 200, pullJson(p)) : refuse(req, res, 404, 'Not Found');
      }
      case 'pulls/list-reviews': {
        const p = pulls.find((x) => x.repo === key(repo!.owner, repo!.name) && x.number === num('pull_number'));
        if (!p) return refuse(req, res, 404, 'Not Found');
        const at = `${htmlBase()}/${p.repo}/pull/${p.number}`;
        return send(
          res,
          200,
          (p.reviews ?? []).map((r) => ({
            id: r.id,
            node_id: `PRR_${r.id}`,
            user: r.user,
            body: r.body,
            state: r.state,
            html_url: `${at}#pullrequestreview-${r.id}`,
            pull_request_url: at,
            submitted_at: r.submittedAt,
            commit_id: headSha.get(p) ?? '0'.repeat(40),
            author_association: 'COLLABORATOR',
            _links: { html: { href: at }, pull_request: { href: at } },
          })),
        );
      }
      case 'pulls/create': {
        const head = String(body!.head);
        const base = String(body!.base);
        if (!(await branchExists(repo!, head)))
          return refuse(req, res, 422, `Validation Failed: head ${head} does not exist`);
        if (!(await branchExists(repo!, base)))
          return refuse(req, res, 422, `Validation Failed: base ${base} does not exist`);
        if (head === base) return refuse(req, res, 422, 'Validation Failed: head and base are the same');
        const repoKey = key(repo!.owner, repo!.name);
        if (pulls.some((p) => p.repo === repoKey && p.head === head && p.state === 'open')) {
          // GitHub's shape: "Validation Failed" with the reason in `errors` (listed in `refused`:
          // a second PR for one head is a caller's mistake unless its first answer was lost).
          const message = `A pull request already exists for ${repo!.owner}:${head}.`;
          refused.push({ method: req.method ?? '', path: req.url ?? '', status: 422, message });
          return send(res, 422, {
            message: 'Validation Failed',
            errors: [{ resource: 'PullRequest', code: 'custom', message }],
            documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
            status: '422',
          });
        }
        if (body!.draft === true && !repo!.drafts) {
          // GitHub's answer on a private repository whose plan (Free, Pro) has no drafts: a plan's
          // limit, not a malformed call, so it is listed apart from `refused`.
          draftRefusals.push({ repo: repoKey, head });
          return send(res, 422, {
            message: 'Draft pull requests are not supported in this repository.',
            documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
            status: '422',
          });
        }
        await hooks.beforePullCreate?.({ gitDir: repo!.gitDir, head, base });
        if ((await commitsAhead(repo!, base, head)) === 0) {
          // GitHub's answer for a head with nothing its base lacks. Not a refusal of a malformed call.
          return send(res, 422, {
            message: 'Validation Failed',
            errors: [{ resource: 'PullRequest', code: 'custom', message: `No commits between ${base} and ${head}` }],
            documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
            status: '422',
          });
        }
        const p: Pull = {
          number: nextId++,
          repo: repoKey,
          title: String(body!.title),
          body: String(body!.body ?? ''),
          head,
          headRepo: repoKey,
          base,
          draft: body!.draft === true,
          state: 'open',
          user: userOf(auth!),
        };
        pulls.push(p);
        await refreshHeads([p]);
        return send(res, 201, pullJson(p));
      }
      case 'pulls/update': {
        const p = pulls.find((x) => x.repo === key(repo!.owner, repo!.name) && x.number === num('pull_number'));
        if (!p) return refuse(req, res, 404, 'Not Found');
        if (typeof body?.body === 'string') p.body = body.body;
        if (typeof body?.title === 'string') p.title = body.title;
        return send(res, 200, pullJson(p));
      }
      case 'actions/list-jobs-for-workflow-run': {
        const run = workflowRuns.find((r) => r.repo === key(repo!.owner, repo!.name) && r.id === num('run_id'));
        if (!run) return refuse(req, res, 404, 'Not Found');
        const filter = url.searchParams.get('filter') ?? 'latest';
        if (!['latest', 'all'].includes(filter)) return refuse(req, res, 422, 'filter must be latest or all');
        return send(res, 200, { total_count: run.jobs.length, jobs: run.jobs.map((j) => jobJson(run, j)) });
      }
      case 'actions/download-job-logs-for-workflow-run': {
        const job = workflowRuns
          .filter((r) => r.repo === key(repo!.owner, repo!.name))
          .flatMap((r) => r.jobs)
          .find((j) => j.id === num('job_id'));
        if (!job) return refuse(req, res, 404, 'Not Found');
        const sig = randomBytes(12).toString('hex');
        logLinks.set(sig, { jobId: job.id, expiresAt: Date.now() + 60_000 });
        res.statusCode = 302;
        res.setHeader('location', `${htmlBase()}/_blob/job-logs/${job.id}?sig=${sig}`);
        return void res.end();
      }
      case 'checks/list-for-suite': {
        const list = checkRuns.filter(
          (c) => c.repo === key(repo!.owner, repo!.name) && c.suiteId === num('check_suite_id'),
        );
        const status = url.searchParams.get('status');
        const shown = status === 'completed' || status === null ? list : [];
        return send(res, 200, { total_count: shown.length, check_runs: shown.map(checkRunJson) });
      }
      case 'users/get-by-id': {
        // GitHub's account ids are stable across renames; any token may read a public profile.
        const u = [...users.values()].find((x) => x.id === num('account_id'));
        if (!u) return refuse(req, res, 404, 'Not Found');
        // GitHub's documented public-user example, with this user's login, id and links.
        const template = structuredClone(specExamples['public-user-default-response']!.value) as Record<
          string,
          unknown
        >;
        return send(res, 200, {
          ...template,
          ...u,
          node_id: `U_${u.id}`,
          url: `http://${req.headers.host}/api/v3/users/${u.login}`,
          html_url: `${htmlBase()}/${u.login}`,
          user_view_type: 'public',
        });
      }
      case 'users/get-authenticated': {
        if (auth!.kind !== 'user') return refuse(req, res, 403, 'Resource not accessible by integration');
        const u = users.get(auth!.login)!;
        return send(res, 200, { ...u, name: u.login, html_url: `${htmlBase()}/${u.login}` });
      }
      case 'orgs/get-membership-for-authenticated-user': {
        // A user's own token (a GitHub App user token needs the org's Members: read); 404 to a non-member.
        if (auth!.kind !== 'user') return refuse(req, res, 403, 'Resource not accessible by integration');
        const state = orgMembers.get(params.org!.toLowerCase())?.get(auth!.login);
        if (!state)
          return send(res, 404, {
            message: 'Not Found',
            documentation_url:
              'https://docs.github.com/rest/orgs/members#get-an-organization-membership-for-the-authenticated-user',
            status: '404',
          });
        const u = users.get(auth!.login)!;
        const apiBase = `http://${req.headers.host}/api/v3`;
        return send(res, 200, {
          url: `${apiBase}/orgs/${params.org}/memberships/${u.login}`,
          state,
          role: 'member',
          organization_url: `${apiBase}/orgs/${params.org}`,
          organization: {
            login: params.org,
            id: 1,
            node_id: 'O_kgDOAAAAAQ',
            url: `${apiBase}/orgs/${params.org}`,
            repos_url: `${apiBase}/orgs/${params.org}/repos`,
            events_url: `${apiBase}/orgs/${params.org}/events`,
            hooks_url: `${apiBase}/orgs/${params.org}/hooks`,
            issues_url: `${apiBase}/orgs/${params.org}/issues`,
            members_url: `${apiBase}/orgs/${params.org}/members{/member}`,
            public_members_url: `${apiBase}/orgs/${params.org}/public_members{/member}`,
            avatar_url: '',
            description: null,
          },
          user: {
            ...u,
            node_id: `U_${u.id}`,
            avatar_url: '',
            gravatar_id: '',
            url: `${apiBase}/users/${u.login}`,
            html_url: `${htmlBase()}/${u.login}`,
            site_admin: false,
          },
        });
      }
      case 'apps/list-repos-accessible-to-installation':
      case 'issues/list-comments-for-repo':
      case 'pulls/list-review-comments-for-repo':
      case 'issues/get':
      case 'checks/list-suites-for-ref':
        if (operationId === 'issues/get') await refreshHeads(pulls);
        return answerPolling(
          { operationId, params, query: url.searchParams, repoKey: repo && key(repo.owner, repo.name), auth: auth! },
          {
            repos: [...repos.values()],
            comments: [...comments.values()].map((c) => ({ ...commentJson(c), repo: c.repo, number: c.number })),
            reviewComments: [...reviewComments.values()].map((c) => ({
              ...commentJson(c),
              repo: c.repo,
              number: c.number,
              path: c.path,
              line: c.line,
              diff_hunk: c.diff_hunk,
              ...(c.in_reply_to_id !== undefined && { in_reply_to_id: c.in_reply_to_id }),
            })),
            pulls,
            checkRuns,
            htmlBase: htmlBase(),
            polling,
            send: (status, body) => send(res, status, body),
          },
        );
      case 'repos/get-combined-status-for-ref':
      case 'checks/list-for-ref':
      case 'repos/get-branch-rules':
      case 'repos/get-branch-protection':
        return answerHistory(
          { operationId, params, query: url.searchParams, repoKey: key(repo!.owner, repo!.name), gitDir: repo!.gitDir },
          { statuses, checkRuns, branchRules, htmlBase: htmlBase(), send: (status, body) => send(res, status, body) },
        );
      default:
        return refuse(req, res, 501, `the fake does not implement ${operationId}`);
    }
  }

  async function oauthToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    const type = req.headers['content-type'] ?? '';
    const form: Record<string, string> = type.includes('json')
      ? JSON.parse(raw)
      : Object.fromEntries(new URLSearchParams(raw));
    if (form.client_id !== oauthClient.id || form.client_secret !== oauthClient.secret)
      return send(res, 200, {
        error: 'incorrect_client_credentials',
        error_description: 'The client_id and/or client_secret passed are incorrect.',
        error_uri: 'https://docs.github.com',
      });
    const login = form.code ? oauthCodes.get(form.code) : undefined;
    if (!login)
      return send(res, 200, {
        error: 'bad_verification_code',
        error_description: 'The code passed is incorrect or expired.',
        error_uri: 'https://docs.github.com',
      });
    oauthCodes.delete(form.code!);
    const token = `ghu_${randomBytes(18).toString('base64url')}`;
    tokens.set(token, { kind: 'user', login });
    return send(res, 200, { access_token: token, token_type: 'bearer', scope: '' });
  }

  function git(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const m = /^\/([^/]+)\/([^/]+?)(?:\.git)?(\/(?:info\/refs|git-upload-pack|git-receive-pack))$/.exec(url.pathname);
    const repo = m ? repos.get(key(m[1]!, m[2]!)) : undefined;
    const service = url.searchParams.get('service') ?? m?.[3]?.slice(1) ?? '';
    const header = req.headers.authorization;
    if (!header?.startsWith('Basic ')) {
      res.statusCode = 401;
      res.setHeader('WWW-Authenticate', 'Basic realm="GitHub"');
      return void res.end('Authentication required');
    }
    const [user, pass] = Buffer.from(header.slice(6), 'base64').toString().split(':', 2) as [string, string];
    const auth = tokens.get(pass);
    const receive = service === 'git-receive-pack';
    const okUser = user === 'x-access-token' && auth?.kind === 'installation' && auth.expiresAt > Date.now();
    if (!m || !repo || !okUser || !mayUse(auth!, repo, 'contents', receive ? 'write' : 'read')) {
      gitRequests.push({ path: url.pathname, user, service: `${service} (refused)` });
      res.statusCode = okUser ? 404 : 401;
      if (!okUser) res.setHeader('WWW-Authenticate', 'Basic realm="GitHub"');
      return void res.end(okUser ? 'Repository not found.' : 'Invalid username or password.');
    }
    gitRequests.push({ path: url.pathname, user, service });
    const phase = m[3] === '/info/refs' ? 'info/refs' : 'pack';
    const chaos = githubGitChaosFault(options.chaos, service, phase, `${m[1]}/${m[2]}`);
    if (chaos?.kind === 'dropped') return void dropBeforeAnswer(res);
    if (chaos?.kind === 'answer') {
      res.writeHead(chaos.status, { 'content-type': 'text/plain' });
      return void res.end(chaos.body);
    }
    if (chaos?.kind === 'slow')
      return void answerSlowly(options.chaos!, 'github-git', `${service} ${phase}`).then(() =>
        serveRepo(req, res, url, m, repo, auth!, user),
      );
    serveRepo(req, res, url, m, repo, auth!, user, chaos?.kind === 'drop-after-update');
  }

  function serveRepo(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    m: RegExpExecArray,
    repo: Repo,
    auth: Token,
    user: string,
    dropAnswer = false,
  ): void {
    serveGit(req, res, {
      dropAnswer,
      projectRoot: root,
      pathInfo: `/${repo.gitDir.slice(root.length + 1)}${m[3]}`,
      query: url.search.slice(1),
      remoteUser: user,
      // What the token may do, for the repository's pre-receive rules (workflow files).
      env: { FAKE_GITHUB_WORKFLOWS: auth.kind === 'installation' ? (auth.permissions.workflows ?? 'none') : 'none' },
    });
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const handle =
      url.pathname === '/api/graphql'
        ? graphqlRoute(req, res)
        : url.pathname.startsWith('/_blob/')
          ? Promise.resolve(blob(req, res, url))
          : url.pathname.startsWith('/user-attachments/assets/')
            ? Promise.resolve(attachment(req, res, url))
            : url.pathname.startsWith('/api/v3/')
              ? api(req, res, url)
              : url.pathname === '/login/oauth/access_token' && req.method === 'POST'
                ? oauthToken(req, res)
                : Promise.resolve(git(req, res, url));
    handle.catch((error: unknown) => {
      refused.push({ method: req.method ?? '', path: req.url ?? '', status: 500, message: String(error) });
      if (!res.headersSent) send(res, 500, { message: String(error) });
      else res.end();
    });
  });
  const { port, close: closeServer } = await listenOnLoopback(server);

  return {
    appId,
    slug,
    bot,
    privateKey,
    oauthClient,
    apiUrl: `http://127.0.0.1:${port}/api/v3`,
    gitUrl: `http://127.0.0.1:${port}`,
    root,
    refused,
    draftRefusals,
    /** The App's webhook as GitHub delivers it, with its delivery log (GET /app/hook/deliveries). */
    deliveries,
    calls,
    hooks,
    issuedTokens,
    gitRequests,
    comments,
    reviewComments,
    pulls,
    issueReactions,
    statuses,
    workflowRuns,
    checkRuns,
    logDownloads,
    attachmentDownloads,
    /** Attaches a picture the way a person pastes one into an issue: its link on the GitHub host. */
    attachImage(bytes: Uint8Array, mediaType = 'image/png'): string {
      const path = `/user-attachments/assets/${randomUUID()}`;
      attachments.set(path, { bytes, mediaType });
      return `http://127.0.0.1:${port}${path}`;
    },
    /**
     * A finished GitHub Actions workflow run on `headSha` with its jobs and their logs (lines as
     * Actions writes them, each with its timestamp). Its check suite holds one check run per job,
     * with the job's id, as on GitHub.
     */
    addWorkflowRun(
      owner: string,
      name: string,
      input: {
        name: string;
        headSha: string;
        headBranch: string;
        jobs: { name: string; conclusion: Job['conclusion']; log: string[] }[];
      },
    ): WorkflowRun {
      const id = nextId++;
      const suiteId = nextId++;
      const run: WorkflowRun = {
        id,
        repo: key(owner, name),
        name: input.name,
        headSha: input.headSha,
        headBranch: input.headBranch,
        checkSuiteId: suiteId,
        jobs: input.jobs.map((j) => ({
          id: nextId++,
          runId: id,
          name: j.name,
          conclusion: j.conclusion,
          log: `${j.log.map((line, i) => `2026-01-01T00:00:${String(i % 60).padStart(2, '0')}.0000000Z ${line}`).join('\n')}\n`,
        })),
      };
      workflowRuns.push(run);
      for (const j of run.jobs)
        checkRuns.push({
          id: j.id,
          repo: run.repo,
          suiteId,
          name: j.name,
          headSha: run.headSha,
          conclusion: j.conclusion,
          appSlug: 'github-actions',
          output: { title: null, summary: null, text: null },
        });
      return run;
    },
    graphqlCalls,
    branchRules,
    /** The polling endpoints' calls (with their query) and how many answers were 304 Not Modified. */
    polling,
    /** Answers every call of `operationId` with this status and message until `restore` (also recorded in `refused`). */
    fail(operationId: string, status: number, message: string): void {
      failures.set(operationId, { status, message });
    },
    restore(operationId: string): void {
      failures.delete(operationId);
    },
    /** Does the next `count` calls of `operationId` and then drops the connection unanswered (the answer is lost). */
    dropAfterAccept(operationId: string, count = 1): void {
      drops.set(operationId, count);
    },
    /** Makes `login` a member of `org` (pending: invited, not yet accepted). */
    addOrgMember(org: string, login: string, state: 'active' | 'pending' = 'active'): void {
      const members = orgMembers.get(org.toLowerCase()) ?? new Map<string, 'active' | 'pending'>();
      members.set(login, state);
      orgMembers.set(org.toLowerCase(), members);
    },
    addUser(login: string, type: 'User' | 'Bot' = 'User'): User {
      const user = { login, id: nextId++, type };
      users.set(login, user);
      return user;
    },
    /** Adds a repository backed by a bare clone of `source` (a path), to installation `installationId`. */
    async addRepo(
      owner: string,
      name: string,
      source: string,
      installationId: number,
      collaborators: Record<string, Permission> = {},
    ): Promise<Repo> {
      const gitDir = join(root, owner, `${name}.git`);
      await run('git', ['clone', '--bare', '--quiet', source, gitDir], {
        env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1' },
      });
      await writeFile(join(gitDir, 'hooks', 'pre-receive'), workflowsHook);
      await chmod(join(gitDir, 'hooks', 'pre-receive'), 0o755);
      const repo: Repo = {
        owner,
        name,
        id: nextId++,
        installationId,
        gitDir,
        collaborators: new Map(Object.entries(collaborators)),
        drafts: true,
      };
      repos.set(key(owner, name), repo);
      return repo;
    },
    /** Makes a repository private on the Free plan: GitHub refuses draft pull requests on it from now on. */
    privateOnFreePlan(owner: string, name: string): void {
      repos.get(key(owner, name))!.drafts = false;
    },
    /** A unique id, as GitHub gives reviews, commits statuses and check runs. */
    nextId: () => nextId++,
    repo(owner: string, name: string): Repo {
      return repos.get(key(owner, name))!;
    },
    addPull(
      owner: string,
      name: string,
      input: { head: string; base: string; title: string; user: User; headRepo?: string },
    ): Pull {
      const p: Pull = {
        number: nextId++,
        repo: key(owner, name),
        title: input.title,
        body: 'A human PR.',
        head: input.head,
        headRepo: input.headRepo ?? key(owner, name),
        base: input.base,
        draft: false,
        state: 'open',
        user: input.user,
      };
      pulls.push(p);
      return p;
    },
    /** Closes a pull request (as a person does on GitHub), without merging it. */
    closePull(owner: string, name: string, number: number): Pull {
      const p = pulls.find((x) => x.repo === key(owner, name) && x.number === number)!;
      p.state = 'closed';
      p.closedAt = new Date().toISOString();
      return p;
    },
    addComment(owner: string, name: string, number: number, user: User, body: string, association?: string): Comment {
      const c: Comment = {
        ...stamp(),
        id: nextId++,
        repo: key(owner, name),
        number,
        body,
        user,
        reactions: [],
        ...(association && { association }),
      };
      comments.set(c.id, c);
      return c;
    },
    addReviewComment(
      owner: string,
      name: string,
      number: number,
      user: User,
      input: { body: string; path: string; line: number; diff_hunk: string },
    ): ReviewComment {
      const c: ReviewComment = {
        id: nextId++,
        repo: key(owner, name),
        number,
        user,
        reactions: [],
        ...stamp(),
        ...input,
      };
      reviewComments.set(c.id, c);
      return c;
    },
    /** What GitHub would send the user's browser back with after they authorized the OAuth App. */
    authorizeCode(login: string): string {
      const code = randomBytes(10).toString('hex');
      oauthCodes.set(code, login);
      return code;
    },
    commentsOn(owner: string, name: string, number: number): Comment[] {
      return [...comments.values()].filter((c) => c.repo === key(owner, name) && c.number === number);
    },
    async close() {
      await closeServer();
      await rm(root, { recursive: true, force: true });
    },
  };
}
