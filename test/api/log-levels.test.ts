import { Writable } from 'node:stream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { waitForStatus } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

type Line = { level: number; msg: string; [key: string]: unknown };

/**
 * What an operator's terminal gets at the default LOG_LEVEL=info, through the real logger and
 * server: no line per HTTP request (they were 92% of it), and a user's mistake (a repository that
 * does not exist, a malformed request) as one warning without a stack, not an ERROR with one.
 */
describe('log levels at LOG_LEVEL=info', () => {
  const lines: Line[] = [];
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
      model: createScriptedProvider({ scenario: [{ text: 'done' }] }),
      queue: { pollingIntervalSeconds: 0.5 },
    });
  });
  afterAll(async () => {
    await app?.close();
    await database?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('logs no HTTP request lines, and a missing repository as one warning without a stack', {
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
    const missing = join(dir, 'no-such-repository');
    const res = await fetch(`${app.url}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ repo: missing, prompt: 'Fix the parser' }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const failed = await waitForStatus(app, id, ['failed']);
    expect(failed.error).toContain('does not exist');

    const written = lines.slice(before);
    expect(written.filter((l) => l.req !== undefined || l.res !== undefined || /request/i.test(l.msg))).toEqual([]);
    expect(written.filter((l) => l.level >= 50)).toEqual([]);
    const told = written.filter((l) => l.sessionId === id && l.level === 40);
    expect(told).toEqual([
      expect.objectContaining({
        msg: 'session failed',
        code: 'git_failed',
        reason: expect.stringContaining('does not exist'),
      }),
    ]);
    expect(JSON.stringify(written)).not.toContain('"stack"');
  });
});
