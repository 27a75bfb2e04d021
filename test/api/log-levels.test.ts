import { Writable } from 'node:stream';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

type Line = { level: number; msg: string; [key: string]: unknown };

/**
 * What an operator's terminal gets at the default LOG_LEVEL=info, through the real logger and
 * server: no line per HTTP request (they were 92% of it), and a user's mistake (a repository that
 * does not exist, a malformed request) as one warning without a stack, not an ERROR with one.
 */
describe('log levels at LOG_LEVEL=info', () => {
  const lines: Line[] = [];
  const start = (repo: string, prompt: string) =>
    fetch(`${app.url}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ repo, prompt }),
    });
  let app: Patchbay;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'patchbay-log-levels-'));
    database = await createTestDatabase();
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const text of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(text) as Line);
        done();
      },
    });
    const config = loadConfig({
      DATA_DIR: dir,
      DATABASE_URL: database.url,
      PORT: '0',
      SANDBOX_EGRESS_ALLOW: 'none',
      PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    });
    app = await startPatchbay(config, {
      log: createLogger('info', sink),
      serve: true,
      work: true,
      // "ask me" in the task makes the agent ask; anything else is done at once.
      model: createScriptedProvider({
        scenario: (messages) =>
          JSON.stringify(messages).includes('ask me') && !messages.some((m) => m.role === 'assistant')
            ? {
                toolCalls: [
                  { name: 'ask_user', input: { question: 'Which license?', choices: ['MIT', 'Apache-2.0'] } },
                ],
              }
            : { text: 'done' },
      }),
      queue: { pollingIntervalSeconds: 0.5 },
    });
  });
  afterAll(async () => {
    await app?.close();
    await database?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("logs no HTTP request lines; a missing repository is the request's 400; a failed clone is one info line and git's words one warning, without a stack", {
    timeout: 60_000,
  }, async () => {
    const before = lines.length;
    await fetch(`${app.url}/healthz`);
    await fetch(`${app.url}/api/sessions`);
    await fetch(`${app.url}/`);
    const malformed = await fetch(`${app.url}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"repo": ',
    });
    expect(malformed.status).toBe(400);
    const missing = await start(join(dir, 'no-such-repository'), 'Fix the parser');
    expect(missing.status).toBe(400);
    // A directory that is there but is no git repository: the session fails at its clone.
    const notGit = join(dir, 'not-a-repository');
    await mkdir(notGit);
    const res = await start(notGit, 'Fix the parser');
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const failed = await waitForStatus(app, id, ['failed']);
    expect(failed.error).toBe(
      `${notGit} is not a git repository: git could not clone it. Check the path; the server's log has git's own message.`,
    );

    const written = lines.slice(before);
    expect(written.filter((l) => l.req !== undefined || l.res !== undefined || /request/i.test(l.msg))).toEqual([]);
    expect(written.filter((l) => l.level >= 50)).toEqual([]);
    await waitFor(
      async () => written.concat(lines.slice(before)).some((l) => l.msg === 'session failed') || undefined,
      'the end line',
    );
    const told = lines
      .slice(before)
      .filter((l) => l.sessionId === id && /^(session failed|what the failed step said)$/.test(l.msg));
    expect(told).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'what the failed step said',
        code: 'git_failed',
        cause: expect.stringContaining('git clone'),
      }),
      expect.objectContaining({ level: 30, msg: 'session failed', reason: failed.error }),
    ]);
    expect(JSON.stringify(written)).not.toContain('"stack"');
  });

  it('says in one info line when a session completes and when it waits for a person', { timeout: 60_000 }, async () => {
    const repo = await createRemote();
    try {
      const before = lines.length;
      const done = (await (await start(repo.remote, 'Fix the parser')).json()) as { id: string };
      await waitForStatus(app, done.id, ['completed']);
      const asks = (await (await start(repo.remote, 'Add a license, ask me which')).json()) as { id: string };
      await waitForStatus(app, asks.id, ['waiting']);
      const ends = () =>
        lines.slice(before).filter((l) => l.level === 30 && /^session (completed|failed|waiting)/.test(l.msg));
      await waitFor(async () => ends().length >= 2 || undefined, 'both end lines');
      expect(ends()).toEqual([
        expect.objectContaining({ sessionId: done.id, msg: 'session completed', repo: repo.remote }),
        expect.objectContaining({
          sessionId: asks.id,
          msg: 'session waiting for a person',
          waitsFor: 'an answer',
          question: 'Which license?',
        }),
      ]);
    } finally {
      await repo.cleanup();
    }
  });
});
