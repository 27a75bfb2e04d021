import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { type FakeOpenAI, type OpenAIReply, type OpenAIRequestBody, startFakeOpenAI } from '../fakes/fake-openai.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { addFile, command, inputText, isVerifier, toolOutputs, verifierTurn } from '../helpers/openai-engine-turns.ts';
import { type ServerProcess, serverApi, sessionEnded, startServer } from '../helpers/server-process.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';

const API_KEY = 'test-openai-key';
const SLOW = 'echo first-run-done >> runs.log; sleep 120; echo slept';
const INTERRUPTED = 'Your previous run was interrupted';

/**
 * The model's turns: the first Codex run starts a slow command (its worker is killed during it);
 * the run taken over looks at the workspace, does the command's work only if it is not there, writes
 * the result and finishes.
 */
function crashTurn(body: OpenAIRequestBody, commands: string[]): OpenAIReply {
  const text = inputText(body);
  const n = toolOutputs(body);
  const run = (cmd: string) => {
    commands.push(cmd);
    return command(body, cmd);
  };
  if (!body.tools) return { text: 'Patchbay session' };
  if (!text.includes(INTERRUPTED)) return run(SLOW);
  if (n === 0) return run('cat runs.log 2>/dev/null || echo no-runs-file');
  if (n === 1 && !text.includes('first-run-done\\n')) return run('echo first-run-done >> runs.log');
  if (!text.includes('RESULT.md')) return addFile(body, 'RESULT.md', 'survived a crash');
  return { text: 'Finished after the takeover.' };
}

/**
 * A worker running Codex is SIGKILLed during the engine's command; another worker (a second `patchbay
 * serve` on the same database and data directory, configured from the environment only) takes the run
 * over. The killed worker's CLI dies with it; the new run gives a fresh Codex session the thread and
 * the note that the run was interrupted, and the work is done once: one push, one pull request.
 */
describe('a worker killed with SIGKILL while Codex runs', () => {
  let remote: RemoteFixture;
  let openai: FakeOpenAI;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  let dir: string;
  const servers: ServerProcess[] = [];
  const verifierCalls = new Map<string, number>();
  /** The commands the model asked Codex to run, in order. */
  const commands: string[] = [];

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('README.md', '# web\n', 'init');
    openai = await startFakeOpenAI({
      apiKey: API_KEY,
      responses: (body) => (isVerifier(body) ? verifierTurn(body, verifierCalls) : crashTurn(body, commands)),
    });
    database = await createTestDatabase();
    store = createSessionStore(database.db);
    dir = await mkdtemp(join(tmpdir(), 'patchbay-engine-crash-'));
  }, 60_000);
  afterAll(async () => {
    for (const server of servers) server.child.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
    await database?.close();
    await openai?.close();
    await remote?.cleanup();
    await removeDataDir(dir);
  });

  it('another worker takes the run over and the work is done once', { timeout: 420_000 }, async () => {
    const env = {
      DATABASE_URL: database.url,
      DATA_DIR: join(dir, 'data'),
      PORT: '0',
      LOG_LEVEL: 'info',
      AGENT_ENGINE: 'codex',
      MODEL_PROVIDER: 'openai',
      MODEL: 'gpt-5.5',
      OPENAI_API_KEY: API_KEY,
      OPENAI_BASE_URL: openai.baseUrl,
      SANDBOX_EGRESS_ALLOW: 'none',
      QUEUE_HEARTBEAT_SECONDS: '10',
      QUEUE_MONITOR_SECONDS: '1',
      // The repository is a directory on this machine, which the API takes only when allowed.
      PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    };
    const first = await startServer(env);
    servers.push(first);
    const { id } = await serverApi<{ id: string }>(first, '/api/sessions', {
      method: 'POST',
      body: JSON.stringify({
        repo: remote.remote,
        prompt: 'crash-case: write the result file',
        author: { name: 'Alice', email: 'alice@example.com' },
      }),
    });

    // Killed only once Codex's command is proven to run: its first line is in the workspace.
    const runsLog = join(env.DATA_DIR, 'workspaces', id, 'runs.log');
    await waitFor(
      () =>
        readFile(runsLog, 'utf8').then(
          (text) => text === 'first-run-done\n',
          () => false,
        ),
      'the slow command to start',
      240_000,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    expect((await store.get(id))?.status).toBe('running');
    // The CLI and its command die with the worker's sandbox: nothing of the first run goes on.
    await waitFor(async () => pgrep(SLOW) === '', 'the killed run gone', 10_000);

    const second = await startServer(env);
    servers.push(second);
    const done = await sessionEnded(second, id, 300_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    expect(done.result?.summary).toContain('Finished after the takeover.');
    expect(done.result?.summary).toContain('Engine: Codex');

    // The taken-over run gave a fresh Codex session the task and the note, once.
    const resumed = openai.calls.filter((c) => !isVerifier(c.body) && inputText(c.body).includes(INTERRUPTED));
    expect(resumed.length).toBeGreaterThanOrEqual(3);
    expect(inputText(resumed[0]!.body)).toContain('crash-case: write the result file');
    const runs = await store.events(id, { types: ['run-resumed'] });
    expect(runs).toHaveLength(1);

    // The new run went on in the workspace the killed one left: Codex found the command's work there
    // and did not run it again.
    expect(commands).toEqual([SLOW, 'cat runs.log 2>/dev/null || echo no-runs-file']);

    // The work is done once: one push of the branch, one pull request's worth of commits.
    const pushes = (await store.events(id, { types: ['branch-pushed'] })).map((e) => e.event);
    expect(pushes).toEqual([expect.objectContaining({ branch: done.branch })]);
    const tip = await remote.remoteBranch(done.branch!);
    expect(await git(remote.remote, 'show', `${tip}:RESULT.md`)).toBe('survived a crash');
    expect(await git(remote.remote, 'show', `${tip}:runs.log`)).toBe('first-run-done');
    expect(openai.rejections).toEqual([]);
    second.child.kill('SIGTERM');
    await second.exited;
  });
});

function pgrep(pattern: string): string {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
