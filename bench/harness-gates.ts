/**
 * Does "ready" mean verified? The real session loop (worker, workspace, setup, checks, verifier,
 * rework, push, pull request on the fake GitHub) over the seeded tasks and the attacks, once per reviewer kind:
 *
 * - `trusting`: a scripted reviewer that passes whatever the checks did not fail;
 * - `instructed`: one that follows the verifier's instructions as a simple reader can (a check that
 *   did not run is not evidence; files the task does not name are out of scope; a parameter the
 *   changed function stops using is dropped behaviour).
 *
 * Each task is a small repository with a visible test (its `npm test`, or none) and a hidden test
 * that decides whether the result is right; a scripted agent makes the task's change (and, told the
 * checks failed, its next attempt). The tasks: correct fixes; wrong fixes that pass the visible
 * test; scope creep and an unrelated rewrite; a helper in an ignored directory and one hidden by
 * .git/info/exclude; a check that commits (moves HEAD); repositories without tests; a flaky test;
 * failures whose logs differ only by a random seed, a port or a timestamp; CI workflows with deploy
 * steps; and issue 35's attacks from inside the agent's workspace (harness-gates-attacks.ts). After
 * each session the pull request's head is checked out fresh and the hidden test run. Ready is what
 * GitHub shows: not a draft and a success `patchbay/verify` status on the head.
 *
 * Prints per reviewer kind: sessions that reached ready with the hidden test failing (the goal is 0
 * wherever the checks can see it), correct results kept as draft, check-fix rounds, and wall time;
 * then one line per task. Run: `node bench/harness-gates.ts` (no network; bubblewrap required).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import type { EventOf, StoredEvent } from '../src/core/events.ts';
import { startPatchbay } from '../src/main.ts';
import type { ModelMessage } from '../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../src/models/scripted-provider.ts';
import { buildIntegrations } from '../src/wire-integrations.ts';
import { startFakeGitHub } from '../test/fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../test/fakes/fake-github-webhooks.ts';
import { attackTasks } from './harness-gates-attacks.ts';
import { benchTasks as seededTasks, type BenchTask } from './harness-gates-tasks.ts';

const benchTasks = [...seededTasks, ...attackTasks];
import { instructedReviewer, trustingReviewer } from './harness-gates-reviewers.ts';

const run = promisify(execFile);
const secret = 'bench-webhook-secret';
const gitEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@example.com',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@example.com',
};
const git = async (cwd: string, ...args: string[]) => (await run('git', args, { cwd, env: gitEnv })).stdout.trim();
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);
const sessionTimeoutMs = 240_000;

async function writeFiles(dir: string, files: Record<string, string>) {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

/** The task's agent: its attempt for the number of times the harness sent work back, one file or command a turn. */
function agent(messages: readonly ModelMessage[]): ScriptedTurn {
  const texts = messages.flatMap((m) => (m.role === 'user' ? [m.content] : []));
  const name = /\[task:([\w-]+)\]/.exec(texts.join('\n'))?.[1];
  const task = benchTasks.find((t) => t.name === name);
  if (!task) return { text: 'No task found.' };
  const round = texts.filter((t) => t.includes('checks on your commit') || t.includes('independent reviewer')).length;
  const last = messages.findLastIndex((m) => m.role === 'user');
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  // A loop the harness never ends is cut here: after eight rounds the agent gives up.
  if (round >= 8) return { text: 'I cannot make this pass.\nOUTSIDE-TASK: the failure repeats whatever I change' };
  const attempt = task.attempts[Math.min(round, task.attempts.length - 1)]!;
  const turns: ScriptedTurn[] = [
    ...Object.entries(attempt.files ?? {}).map(
      ([path, content]): ScriptedTurn => ({ toolCalls: [{ name: 'write_file', input: { path, content } }] }),
    ),
    ...(attempt.shell ?? []).map(
      (command): ScriptedTurn => ({ toolCalls: [{ name: 'run_shell', input: { command } }] }),
    ),
    { text: `Done (attempt ${round + 1}).` },
  ];
  return turns[Math.min(turn, turns.length - 1)]!;
}

type Row = { task: BenchTask; ready: boolean; hiddenPassed: boolean; rounds: number; status: string };

async function hiddenTest(gitDir: string, branch: string, hidden: string): Promise<boolean> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-hidden-'));
  try {
    await run('sh', ['-c', `git --git-dir "$0" archive "$1" | tar -x -C "$2"`, gitDir, branch, dir], { env: gitEnv });
    await writeFile(join(dir, 'hidden.test.js'), hidden);
    await run(process.execPath, ['hidden.test.js'], { cwd: dir, timeout: 30_000 });
    return true;
  } catch {
    return false;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function runKind(kind: 'trusting' | 'instructed'): Promise<{ rows: Row[]; wallMs: number }> {
  const fake = await startFakeGitHub();
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-gates-'));
  const sources = await mkdtemp(join(tmpdir(), 'bench-gates-src-'));
  const alice = fake.addUser('alice');
  const owner = 'bench';
  for (const task of benchTasks) {
    const dir = join(sources, task.name);
    await writeFiles(dir, task.files);
    await git(dir, 'init', '-q', '-b', 'main');
    await git(dir, 'add', '-A');
    await git(dir, 'commit', '-qm', 'base');
    await fake.addRepo(owner, task.name, dir, 1, { alice: 'write' });
  }
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'silent',
    SANDBOX_EGRESS_ALLOW: 'none',
    CHECK_TIMEOUT_MINUTES: '1',
    GITHUB_APP_ID: String(fake.appId),
    GITHUB_APP_PRIVATE_KEY: fake.privateKey,
    GITHUB_WEBHOOK_SECRET: secret,
    GITHUB_API_URL: fake.apiUrl,
    GITHUB_GIT_URL: fake.gitUrl,
  });
  const verifier = createScriptedProvider({
    model: 'scripted-verifier',
    scenario: kind === 'trusting' ? trustingReviewer : instructedReviewer,
  });
  const app = await startPatchbay(config, {
    log: pino({ level: 'silent' }),
    work: true,
    serve: true,
    model: createScriptedProvider({ scenario: agent }),
    verifierModel: verifier,
    queue: { pollingIntervalSeconds: 0.5 },
    integrations: (context) => buildIntegrations(config, context),
  });
  const rows: Row[] = [];
  const started = performance.now();
  try {
    for (const [i, task] of benchTasks.entries()) {
      const number = 100 + i;
      const text = `@patchbay-test ${task.request} [task:${task.name}]`;
      const comment = fake.addComment(owner, task.name, number, alice, text);
      const payload = issueCommentEvent(
        { owner, repo: task.name, installationId: 1 },
        { number, title: task.request, body: task.request, commentId: comment.id, user: alice, comment: comment.body },
      );
      const sent = await sendWebhook(`${app.url}/github/webhooks`, secret, 'issue_comment', payload);
      if (sent.status !== 202) throw new Error(`webhook answered ${sent.status}`);
      const deadline = Date.now() + sessionTimeoutMs;
      let session = await app.store.findByThread({ source: 'github', owner, repo: task.name, number, kind: 'issue' });
      while (
        (!session || !['completed', 'failed', 'waiting', 'cancelled'].includes(session.status)) &&
        Date.now() < deadline
      ) {
        await new Promise((r) => setTimeout(r, 200));
        session = await app.store.findByThread({ source: 'github', owner, repo: task.name, number, kind: 'issue' });
      }
      if (!session) throw new Error(`no session for ${task.name}`);
      const status = ['completed', 'failed', 'waiting'].includes(session.status) ? session.status : 'timed out';
      if (status === 'timed out')
        await app.service.stop(session.id, { source: 'github', id: 'alice', name: 'alice' }).catch(() => undefined);
      const events = await app.store.events(session.id);
      const rounds =
        of(events, 'user-message').filter(
          (m) => m.actor.source === 'system' && /checks on your commit|independent reviewer/.test(m.text),
        ).length + 1;
      const pr = fake.pulls.find((p) => p.repo.endsWith(`/${task.name}`) && p.head === session.branch);
      const gitDir = fake.repo(owner, task.name).gitDir;
      const hiddenPassed = session.branch && pr ? await hiddenTest(gitDir, session.branch, task.hidden) : false;
      // Ready is what GitHub shows: not a draft, and a success patchbay/verify status on the head.
      const head = session.branch ? await git(gitDir, 'rev-parse', `refs/heads/${session.branch}`).catch(() => '') : '';
      const verify = fake.statuses.filter((s) => s.context === 'patchbay/verify' && s.sha === head).at(-1);
      const ready = pr !== undefined && !pr.draft && verify?.state === 'success';
      rows.push({ task, ready, hiddenPassed, rounds, status });
    }
  } finally {
    await app.close();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(sources, { recursive: true, force: true });
  }
  return { rows, wallMs: performance.now() - started };
}

function summary(kind: string, { rows, wallMs }: { rows: Row[]; wallMs: number }): string[] {
  const escapes = rows.filter((r) => r.ready && !r.hiddenPassed);
  const visible = escapes.filter((r) => r.task.checksCanSee);
  const keptDraft = rows.filter((r) => !r.ready && r.hiddenPassed);
  const forged = rows.filter((r) => r.ready && r.task.kind.startsWith('attack:'));
  const rounds = rows.map((r) => r.rounds);
  return [
    `| ${kind} | ${escapes.length} (${visible.length} the checks could see) | ${forged.length} | ${keptDraft.length} | ${rounds.reduce((a, b) => a + b, 0)} total, ${Math.max(...rounds)} max | ${(wallMs / 1000).toFixed(0)} s |`,
  ];
}

async function main() {
  const results = { trusting: await runKind('trusting'), instructed: await runKind('instructed') };
  console.log(`tasks: ${benchTasks.length}, per reviewer kind`);
  console.log('');
  console.log(
    '| reviewer | ready with the hidden test failing | ready on an attack | kept draft while correct | check-fix rounds | wall time |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const [kind, result] of Object.entries(results)) console.log(summary(kind, result).join('\n'));
  console.log('');
  console.log('| task | kind | trusting | instructed |');
  console.log('|---|---|---|---|');
  const cell = (r: Row) =>
    `${r.ready ? 'READY' : 'draft'}${r.ready && !r.hiddenPassed ? ' (hidden FAILS)' : !r.ready && r.hiddenPassed ? ' (correct)' : ''}, ${r.rounds} round${r.rounds === 1 ? '' : 's'}${r.status === 'completed' ? '' : `, ${r.status}`}`;
  for (const [i, task] of benchTasks.entries())
    console.log(
      `| ${task.name} | ${task.kind} | ${cell(results.trusting.rows[i]!)} | ${cell(results.instructed.rows[i]!)} |`,
    );
}

await main();
