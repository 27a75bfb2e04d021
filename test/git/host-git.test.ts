import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPatchbayError } from '../../src/core/errors.ts';
import { redactCredentials, runHostGit } from '../../src/git/host-git.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'patchbay-rungit-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const signal = (): AbortSignal => AbortSignal.timeout(20_000);

describe('runHostGit', () => {
  it('returns stdout', async () => {
    expect(await runHostGit(['--version'], { signal: signal() })).toMatch(/^git version \d/);
  });

  it('does not pass the host environment to git', async () => {
    process.env.GIT_CONFIG_PARAMETERS = "'user.name=leaked-from-host'";
    try {
      const error = await runHostGit(['config', '--get', 'user.name'], { cwd: dir, signal: signal() }).catch(
        (e: unknown) => e,
      );
      expect(isPatchbayError(error, 'git_failed')).toBe(true);
      expect(
        await runHostGit(['config', '--get', 'user.name'], {
          cwd: dir,
          signal: signal(),
          config: { 'user.name': 'given' },
        }),
      ).toBe('given\n');
    } finally {
      delete process.env.GIT_CONFIG_PARAMETERS;
    }
  });

  it('throws git_failed with the stderr tail and no credentials', async () => {
    const error = await runHostGit(['ls-remote', 'https://someone:s3cret-token@127.0.0.1:1/repo.git'], {
      signal: signal(),
    }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(/127\.0\.0\.1/);
    expect(message).not.toContain('s3cret-token');
  });

  it('kills git and what it started when aborted', async () => {
    const marker = join(dir, 'alias-finished');
    const controller = new AbortController();
    const running = runHostGit(['-c', `alias.slow=!sleep 1.5 && touch ${marker}`, 'slow'], {
      cwd: dir,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 200);
    const error = await running.catch((e: unknown) => e);
    expect(isPatchbayError(error, 'aborted')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await expect(stat(marker)).rejects.toThrow();
  });

  it('redacts user info in URLs', () => {
    expect(redactCredentials('fatal: https://x-access-token:ghs_abc@github.com/o/r.git failed')).toBe(
      'fatal: https://***@github.com/o/r.git failed',
    );
  });
});
