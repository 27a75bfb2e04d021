/**
 * Session start time on GitHub: from the webhook request to the model's first call, for a cold
 * repository (no mirror yet: Patchbay clones it from the git host) and for a mirrored one (it only
 * fetches what is new, then clones the session workspace locally), next to a plain `git clone` of
 * the same repository from the same host in the same run. The repository has a few thousand commits;
 * the host is the loopback fake GitHub serving it with the real `git http-backend`.
 * Run: npm exec -- node bench/github-start.ts [commits]
 *      npm exec -- node bench/github-start.ts --large   (50,000 commits, 20,000 files)
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createGitHubClient } from '../integrations/github/github-client.ts';
import type { GitHubStore } from '../integrations/github/github-store.ts';
import { loadConfig } from '../src/config.ts';
import { startPatchbay } from '../src/main.ts';
import type { ModelProvider, TurnRequest } from '../src/models/model-provider.ts';
import { createScriptedProvider } from '../src/models/scripted-provider.ts';
import { buildIntegrations } from '../src/wire-integrations.ts';
import { startFakeGitHub } from '../test/fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../test/fakes/fake-github-webhooks.ts';

// `--large`: at least 50,000 commits over 20,000 files in 200 directories (the issue's large repository).
const LARGE = process.argv.includes('--large');
const COMMITS = LARGE ? 50_000 : Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 3000);
const FILES = LARGE ? 20_000 : 300;
const DIRS = LARGE ? 200 : 1;
const secret = 'bench-webhook-secret';
const gitEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
};

/** Where file n lives: FILES files spread over DIRS directories, so no tree is huge. */
const filePath = (n: number) => (DIRS > 1 ? `src/dir-${n % DIRS}/file-${n}.txt` : `src/file-${n}.txt`);

function makeRepo(dir: string): void {
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', dir], { env: gitEnv });
  // fast-import: COMMITS commits, each rewriting one of FILES files, so history and tree both grow.
  // The first commit adds every file, so the tree has FILES files from the start.
  const parts: string[] = [];
  const body = (n: number, revision: number) =>
    `file ${n}\n${'line of text for the benchmark repository\n'.repeat(20)}revision ${revision}\n`;
  const commit = (i: number) => {
    const message = `commit ${i}\n`;
    parts.push(
      `commit refs/heads/main\ncommitter Bench <bench@example.com> ${1_700_000_000 + i} +0000\ndata ${Buffer.byteLength(message)}\n${message}`,
    );
  };
  const modify = (n: number, revision: number) => {
    const content = body(n, revision);
    parts.push(`M 644 inline ${filePath(n)}\ndata ${Buffer.byteLength(content)}\n${content}\n`);
  };
  commit(1);
  for (let n = 0; n < FILES; n++) modify(n, 1);
  for (let i = 2; i <= COMMITS; i++) {
    commit(i);
    modify(i % FILES, i);
  }
  const result = spawnSync('git', ['--git-dir', dir, 'fast-import', '--quiet'], {
    input: parts.join(''),
    env: gitEnv,
    maxBuffer: 1 << 30,
  });
  if (result.status !== 0) throw new Error(`fast-import failed: ${result.stderr}`);
  execFileSync('git', ['--git-dir', dir, 'gc', '--quiet'], { env: gitEnv });
}

const work = await mkdtemp(join(tmpdir(), 'bench-github-'));
const fake = await startFakeGitHub();
try {
  const source = join(work, 'source.git');
  makeRepo(source);
  const alice = fake.addUser('alice');
  await fake.addRepo('bench', 'big', source, 1, { alice: 'write' });
  const repoUrl = `${fake.gitUrl}/bench/big`;
  const log = pino({ level: process.env.BENCH_LOG ?? 'silent' });
  const size = execFileSync('du', ['-sh', fake.repo('bench', 'big').gitDir])
    .toString()
    .split('\t')[0];

  // Baseline: a plain clone of the same repository from the same host, with an installation token.
  const client = createGitHubClient({
    appId: String(fake.appId),
    privateKey: fake.privateKey,
    apiUrl: fake.apiUrl,
    gitUrl: fake.gitUrl,
    store: { installationFor: async () => undefined } as unknown as GitHubStore,
    log,
  });
  const credentials = (await client.gitEnv(repoUrl))!;
  const started = performance.now();
  // Async: the fake host runs in this process and must keep serving while git clones.
  await promisify(execFile)('git', ['clone', '--quiet', repoUrl, join(work, 'plain')], {
    env: { ...gitEnv, ...credentials },
  });
  const plainMs = performance.now() - started;

  let firstCall: (() => void) | undefined;
  const scripted = createScriptedProvider({ scenario: [{ text: 'Nothing to change.' }] });
  const model: ModelProvider = {
    name: scripted.name,
    model: scripted.model,
    contextWindow: scripted.contextWindow,
    runTurn(request: TurnRequest) {
      firstCall?.();
      firstCall = undefined;
      return scripted.runTurn(request);
    },
  };
  const dataDir = join(work, 'patchbay');
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'silent',
    GITHUB_APP_ID: String(fake.appId),
    GITHUB_APP_PRIVATE_KEY: fake.privateKey,
    GITHUB_WEBHOOK_SECRET: secret,
    GITHUB_API_URL: fake.apiUrl,
    GITHUB_GIT_URL: fake.gitUrl,
  });
  const app = await startPatchbay(config, {
    log,
    work: true,
    serve: true,
    model,
    queue: { pollingIntervalSeconds: 0.5 },
    integrations: (context) => buildIntegrations(config, context),
  });
  try {
    const startSession = async (issue: number): Promise<number> => {
      const comment = fake.addComment('bench', 'big', issue, alice, '@patchbay-test look at this');
      const payload = issueCommentEvent(
        { owner: 'bench', repo: 'big', installationId: 1 },
        {
          number: issue,
          title: `Issue ${issue}`,
          body: 'Please look.',
          commentId: comment.id,
          user: alice,
          comment: comment.body,
        },
      );
      const called = new Promise<void>((resolve) => (firstCall = resolve));
      const begin = performance.now();
      const sent = await sendWebhook(`${app.url}/github/webhooks`, secret, 'issue_comment', payload);
      if (sent.status !== 202) throw new Error(`webhook answered ${sent.status}`);
      await called;
      return performance.now() - begin;
    };
    // A later session comes after the earlier one's run has ended, which leaves a spare checkout of
    // the base for it: wait for that (up to a minute) before each warm start.
    const spareReady = async () => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
        const entries = await readdir(join(dataDir, 'spares')).catch(() => [] as string[]);
        if (entries.some((e) => !e.includes('.partial-') && !e.includes('.taken-'))) return true;
      }
      return false;
    };
    const cold = await startSession(1);
    const warm: number[] = [];
    let spares = 0;
    for (const issue of [2, 3, 4]) {
      if (await spareReady()) spares += 1;
      warm.push(await startSession(issue));
    }
    warm.sort((a, b) => a - b);
    const mirrored = warm[1]!;
    const fmt = (ms: number) => `${ms.toFixed(0).padStart(6)} ms`;
    console.log(
      `repository: ${COMMITS} commits, ${FILES} files, ${size} on the host; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    console.log(`plain git clone (baseline)            ${fmt(plainMs)}`);
    console.log(`session start, cold (no mirror)       ${fmt(cold)}   ${(cold / plainMs).toFixed(2)}x the plain clone`);
    console.log(
      `session start, mirrored (median of 3) ${fmt(mirrored)}   ${(mirrored / plainMs).toFixed(2)}x the plain clone, ${(cold / mirrored).toFixed(1)}x faster than cold`,
    );
    console.log(`(${spares} of 3 warm starts found the spare checkout of the base the previous run left)`);
    console.log(`second-session start / cold clone: ${((mirrored / plainMs) * 100).toFixed(1)}% (goal: at most 10%)`);
    console.log(
      `(session start = webhook POST to the model's first call: verify and queue the delivery, permission check, hand-off, workspace from the mirror, sandbox; 👀 and the progress comment follow in parallel)`,
    );
  } finally {
    await app.close();
  }
} finally {
  await fake.close();
  await rm(work, { recursive: true, force: true });
}
