import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type ApiServer } from '../../src/api/server.ts';
import { runHostGit } from '../../src/git/host-git.ts';
import { repoUrlRefusal, resolveRepo } from '../../src/git/mirror.ts';
import { createApiFixture, type ApiFixture } from '../api/api-fixture.ts';

const exec = promisify(execFile);

// Finding 10 (and issue 25's `repo: "not a url at all"`): repository texts are URLs in the forms
// Patchbay takes, or directories where paths are allowed; git transport helpers never reach git.
describe('repository inputs: https, ssh, git@ (and local paths where allowed); no transport helpers', () => {
  it.each([
    ['https://github.com/acme/app.git', undefined],
    ['ssh://git@github.com/acme/app', undefined],
    ['git@github.com:acme/app.git', undefined],
    ['file:///srv/repos/app', undefined],
    ['http://127.0.0.1:8080/acme/app.git', undefined],
    ['http://localhost:8080/acme/app', undefined],
    ['fd::17', /transport helpers/],
    ['ext::sh -c touch% /tmp/pwned', /transport helpers/],
    ['FD::0', /transport helpers/],
    ['git://github.com/acme/app', /git:\/\/ is not accepted/],
    ['ftp://example.com/app.git', /ftp:\/\/ is not accepted/],
    ['http://github.com/acme/app', /loopback/],
    ['github.com:acme/app', /user@host:owner\/repo/],
    ['fd:17', /user@host:owner\/repo/],
    ['git@github.com::acme', /user@host:owner\/repo/],
    ['https://github.com/acme/app\nx', /control characters/],
  ])('%j', (text, expected) => {
    const refusal = repoUrlRefusal(text);
    if (expected === undefined) expect(refusal).toBeUndefined();
    else expect(refusal).toMatch(expected);
  });

  it('resolveRepo refuses a transport helper with invalid_input, so nothing downstream runs it', () => {
    expect(() => resolveRepo('fd::17')).toThrow(
      expect.objectContaining({ code: 'invalid_input', message: expect.stringMatching(/fd::17.*transport helpers/) }),
    );
  });

  it('host git refuses fd:: and ext:: itself (GIT_ALLOW_PROTOCOL), even when a caller forgets to check', async () => {
    for (const remote of ['fd::17', 'ext::sh -c true']) {
      await expect(runHostGit(['ls-remote', '--', remote], { signal: AbortSignal.timeout(20_000) })).rejects.toThrow(
        /transport '(fd|ext)' not allowed/,
      );
    }
    // A caller's env cannot widen it.
    await expect(
      runHostGit(['ls-remote', '--', 'fd::17'], {
        signal: AbortSignal.timeout(20_000),
        env: { GIT_ALLOW_PROTOCOL: 'fd' },
      }),
    ).rejects.toThrow(/transport 'fd' not allowed/);
  });
});

describe('the API answers a bad repository with a 400 and starts nothing', () => {
  let fx: ApiFixture;
  let urlsOnly: ApiServer;
  let withPaths: ApiServer;

  beforeAll(async () => {
    fx = await createApiFixture();
    const deps = { service: fx.service, store: fx.store, db: fx.db, bus: fx.bus, log: pino({ level: 'silent' }) };
    urlsOnly = createServer(deps);
    withPaths = createServer({ ...deps, allowLocalRepos: true });
  });
  afterAll(async () => {
    await urlsOnly?.close();
    await withPaths?.close();
    await fx?.close();
  });

  it.each(['fd::17', 'ext::sh -c id', 'not a url at all', 'git://github.com/acme/app', 'http://github.com/acme/app'])(
    '%j',
    async (repo) => {
      for (const app of [urlsOnly, withPaths]) {
        const res = await app.inject({ method: 'POST', url: '/api/sessions', payload: { repo, prompt: 'Fix it' } });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({
          error: 'invalid_input',
          message: expect.stringMatching(/https:\/\/|git URL/),
        });
      }
      expect(await fx.store.list()).toEqual([]);
    },
  );

  it('still takes an absolute path on the server where PATCHBAY_ALLOW_LOCAL_REPOS allows it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'patchbay-local-repo-'));
    try {
      const res = await withPaths.inject({
        method: 'POST',
        url: '/api/sessions',
        payload: { repo: dir, prompt: 'Fix it' },
      });
      expect(res.statusCode).toBe(201);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the CLI says what is wrong with --repo before starting anything', () => {
  it('refuses "not a url at all" and fd::17 with one clear line and exit 1', { timeout: 60_000 }, async () => {
    for (const repo of ['not a url at all', 'fd::17']) {
      const result = await exec(process.execPath, ['src/cli.ts', 'run', '--repo', repo, 'Fix it'], {
        // A database that does not exist: the check must come before anything connects to it.
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: tmpdir(),
          PATCHBAY_ENV_FILE: '/dev/null',
          DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        },
        timeout: 30_000,
      }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^patchbay: .*(neither a repository URL|transport helpers)/);
    }
  });
});
