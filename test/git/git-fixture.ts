import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';

const run = promisify(execFile);

const fixtureEnv = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Upstream Dev',
  GIT_AUTHOR_EMAIL: 'upstream@example.com',
  GIT_COMMITTER_NAME: 'Upstream Dev',
  GIT_COMMITTER_EMAIL: 'upstream@example.com',
};

/** Runs git for the test itself (setting up and inspecting repositories), outside the code under test. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  // safe.directory: as root, a workspace belongs to the sandbox user, and the test inspects it anyway.
  const { stdout } = await run('git', ['-c', 'protocol.file.allow=always', '-c', 'safe.directory=*', ...args], {
    cwd,
    env: fixtureEnv,
  });
  return stdout.trim();
}

export type RemoteFixture = {
  root: string;
  /** The bare repository standing in for the hosted remote. */
  remote: string;
  /** Commits one file to `branch` of the remote (through a scratch clone) and returns the commit. */
  pushCommit(file: string, content: string, message: string, branch?: string): Promise<string>;
  /** The commit a branch of the remote points at, or '' when it does not exist. */
  remoteBranch(branch: string): Promise<string>;
  cleanup(): Promise<void>;
};

export async function createRemote(): Promise<RemoteFixture> {
  const root = await mkdtemp(join(tmpdir(), 'patchbay-git-'));
  const remote = join(root, 'remote.git');
  const scratch = join(root, 'scratch');
  await git(root, '-c', 'init.defaultBranch=main', 'init', '--quiet', '--bare', remote);
  await git(root, '-c', 'init.defaultBranch=main', 'init', '--quiet', scratch);
  await git(scratch, 'remote', 'add', 'origin', remote);
  const fixture: RemoteFixture = {
    root,
    remote,
    async pushCommit(file, content, message, branch = 'main') {
      await git(scratch, 'fetch', '--quiet', 'origin');
      const exists = await git(scratch, 'ls-remote', '--heads', 'origin', branch);
      if (exists) await git(scratch, 'checkout', '--quiet', '-B', branch, `origin/${branch}`);
      else await git(scratch, 'checkout', '--quiet', '-B', branch);
      await mkdir(dirname(join(scratch, file)), { recursive: true });
      await writeFile(join(scratch, file), content);
      await git(scratch, 'add', file);
      await git(scratch, 'commit', '--quiet', '-m', message);
      await git(scratch, 'push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`);
      return git(scratch, 'rev-parse', 'HEAD');
    },
    async remoteBranch(branch) {
      const out = await git(root, 'ls-remote', '--heads', remote, branch);
      return out.split('\t')[0] ?? '';
    },
    cleanup: () => removeDataDir(root),
  };
  await fixture.pushCommit('README.md', '# demo\n', 'Initial commit');
  return fixture;
}
