import { execFile } from 'node:child_process';
import { cp, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Git on the host for the eval's own repositories: no user or system configuration, no transport
 * but local files (the same restriction as every git Patchbay runs on the host).
 */
export function evalGit(cwd: string, ...args: string[]) {
  return run('git', args, {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
    env: {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ALLOW_PROTOCOL: 'file',
    },
  });
}

/**
 * A bare "remote" at `<root>/<name>.git` holding the task's `repo/` files as one commit on main:
 * what the session clones and pushes to. The hidden tests are never in it.
 */
export async function makeTaskRemote(root: string, name: string, repoDir: string): Promise<string> {
  const remote = join(root, `${name}.git`);
  const work = join(root, `${name}-work`);
  await mkdir(work, { recursive: true });
  await evalGit(root, 'init', '--quiet', '--bare', '--initial-branch=main', remote);
  await evalGit(root, 'init', '--quiet', '--initial-branch=main', work);
  await cp(repoDir, work, { recursive: true });
  await evalGit(work, 'add', '.');
  await evalGit(
    work,
    '-c',
    'user.name=Patchbay eval',
    '-c',
    'user.email=eval@patchbay.invalid',
    'commit',
    '--quiet',
    '-m',
    'Initial commit',
  );
  await evalGit(work, 'push', '--quiet', remote, 'main');
  return remote;
}

/** The files of `commit` in `remote`, path and text (eval repositories are small text files). */
export async function filesAt(remote: string, commit: string): Promise<{ path: string; content: string }[]> {
  const { stdout } = await evalGit(remote, 'ls-tree', '-r', '-z', '--name-only', commit);
  const paths = stdout.split('\0').filter(Boolean);
  const files: { path: string; content: string }[] = [];
  for (const path of paths) files.push({ path, content: (await evalGit(remote, 'show', `${commit}:${path}`)).stdout });
  return files;
}
