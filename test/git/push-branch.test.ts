import { execFile } from 'node:child_process';
import { lstat, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExecOptions, LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
import { isPatchbayError } from '../../src/core/errors.ts';
import { commitAll } from '../../src/git/commit-all.ts';
import { prepareWorkspace } from '../../src/git/prepare-workspace.ts';
import { gitBasicAuthEnv } from '../../src/git/git-auth-env.ts';
import { pushBranch } from '../../src/git/push-branch.ts';
import { type FakeGitHub, startFakeGitHub } from '../fakes/fake-github.ts';
import { mintInstallationToken } from '../fakes/github-app-jwt.ts';
import { type ScriptedChaos, scriptedChaos } from '../fakes/scripted-chaos.ts';
import { createRemote, git, type RemoteFixture } from './git-fixture.ts';
import { createProvider, sh, silentLog, startSession, type SessionFixture } from './sandbox-fixture.ts';

const signal = (): AbortSignal => AbortSignal.timeout(30_000);
const ada = { name: 'Ada Lovelace', email: 'ada@example.com' };

let fixture: RemoteFixture;
let dataDir: string;
let provider: LocalSandboxProvider;
let session: SessionFixture;
beforeEach(async () => {
  fixture = await createRemote();
  dataDir = join(fixture.root, 'data');
  provider = await createProvider(dataDir);
  session = await startSession(provider, fixture, dataDir, 's1');
});
afterEach(async () => {
  await session.sandbox.destroy();
  await fixture.cleanup();
});

async function commitFile(s: SessionFixture, file: string, content: string): Promise<string> {
  await s.sandbox.writeFile(file, content);
  const { commit } = await commitAll(s.sandbox, { message: `Write ${file}`, author: ada, signal: signal() });
  if (!commit) throw new Error('expected a commit');
  return commit;
}

function push(
  s: SessionFixture,
  extra: { branch?: string; sandbox?: Sandbox; protectedBranches?: string[]; baseBranch?: string } = {},
) {
  return pushBranch({
    sandbox: extra.sandbox ?? s.sandbox,
    workspaceDir: s.workspaceDir,
    repo: fixture.remote,
    branch: extra.branch ?? s.branch,
    dataDir,
    log: silentLog,
    signal: signal(),
    ...(extra.protectedBranches ? { protectedBranches: extra.protectedBranches } : {}),
    ...(extra.baseBranch ? { baseBranch: extra.baseBranch } : {}),
  });
}

async function remoteRefs(): Promise<string> {
  return git(fixture.root, 'ls-remote', fixture.remote);
}

describe('pushBranch', () => {
  it('pushes only the session branch; main on the remote is unchanged', async () => {
    const mainBefore = await fixture.remoteBranch('main');
    await sh(session.sandbox, 'git branch -q side && git tag v-model');
    const commit = await commitFile(session, 'feature.txt', 'feature');

    const result = await push(session);
    expect(result).toEqual({ commit, remote: fixture.remote });
    expect(await fixture.remoteBranch('patchbay/s1')).toBe(commit);
    expect(await fixture.remoteBranch('main')).toBe(mainBefore);
    const refs = await remoteRefs();
    expect(refs).not.toContain('refs/heads/side');
    expect(refs).not.toContain('refs/tags/');
    // The bundle is gone from the workspace and no copy is left on the host.
    await expect(lstat(join(session.workspaceDir, '.git', 'patchbay-push.bundle'))).rejects.toThrow();
    expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
  });

  it('pushes later commits as a fast-forward', async () => {
    await commitFile(session, 'one.txt', '1');
    await push(session);
    const second = await commitFile(session, 'two.txt', '2');
    const result = await push(session);
    expect(result.commit).toBe(second);
    expect(await fixture.remoteBranch('patchbay/s1')).toBe(second);
  });

  it('pushes when the remote moved on meanwhile (commits the workspace lacks are left out of the bundle)', async () => {
    const newerMain = await fixture.pushCommit('upstream.txt', 'u', 'Upstream moved on');
    const commit = await commitFile(session, 'one.txt', '1');
    const result = await push(session);
    expect(result.commit).toBe(commit);
    expect(await fixture.remoteBranch(session.branch)).toBe(commit);
    expect(await fixture.remoteBranch('main')).toBe(newerMain);
  });

  it('pushes a session that started from another base branch', async () => {
    const developTip = await fixture.pushCommit('dev.txt', 'dev', 'Develop work', 'develop');
    const other = await startSession(provider, fixture, dataDir, 's2', 'patchbay/s2', 'develop');
    try {
      const commit = await commitFile(other, 'two.txt', '2');
      const result = await push(other, { baseBranch: 'develop' });
      expect(result.commit).toBe(commit);
      expect(await git(fixture.root, '--git-dir', fixture.remote, 'rev-parse', 'patchbay/s2~1')).toBe(developTip);
      expect(await fixture.remoteBranch('develop')).toBe(developTip);
    } finally {
      await other.sandbox.destroy();
    }
  });

  it('refuses rewritten history (non-fast-forward) and leaves the remote branch as it was', async () => {
    const first = await commitFile(session, 'one.txt', '1');
    await push(session);
    await sh(session.sandbox, 'git reset -q --hard HEAD~1');
    await commitFile(session, 'other.txt', 'rewritten');

    const error = await push(session).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toMatch(/does not fast-forward/);
    expect(await fixture.remoteBranch('patchbay/s1')).toBe(first);
  });

  it('refuses when someone else moved the remote branch', async () => {
    await commitFile(session, 'one.txt', '1');
    await push(session);
    const theirs = await fixture.pushCommit('theirs.txt', 'theirs', 'Pushed by a human', 'patchbay/s1');
    await commitFile(session, 'two.txt', '2');

    const error = await push(session).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect(await fixture.remoteBranch('patchbay/s1')).toBe(theirs);
  });

  it('reports a push the remote declines and puts the mirror branch back', async () => {
    const hook = join(fixture.remote, 'hooks', 'pre-receive');
    await writeFile(hook, '#!/bin/sh\necho "declined by policy" >&2\nexit 1\n', { mode: 0o755 });
    await commitFile(session, 'one.txt', '1');

    const error = await push(session).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toContain('declined by policy');
    expect(await fixture.remoteBranch(session.branch)).toBe('');
    const mirror = join(dataDir, 'mirrors', (await readdir(join(dataDir, 'mirrors')))[0]!);
    expect(await git(mirror, 'for-each-ref', '--format=%(refname)', 'refs/heads/patchbay')).toBe('');

    await rm(hook);
    const result = await push(session);
    expect(await fixture.remoteBranch(session.branch)).toBe(result.commit);
  });

  it.each([['main'], ['master'], ['release'], ['develop']])(
    'refuses to push to protected branch %s',
    async (branch) => {
      await commitFile(session, 'one.txt', '1');
      const mainBefore = await fixture.remoteBranch('main');
      const error = await push(session, { branch, protectedBranches: ['release'], baseBranch: 'develop' }).catch(
        (e: unknown) => e,
      );
      expect(isPatchbayError(error, 'invalid_input')).toBe(true);
      expect(await fixture.remoteBranch('main')).toBe(mainBefore);
      if (branch !== 'main') expect(await fixture.remoteBranch(branch)).toBe('');
    },
  );

  it('refuses the remote default branch even when it is not called main', async () => {
    await git(fixture.root, '--git-dir', fixture.remote, 'branch', 'trunk', 'main');
    await git(fixture.root, '--git-dir', fixture.remote, 'symbolic-ref', 'HEAD', 'refs/heads/trunk');
    await commitFile(session, 'one.txt', '1');
    await sh(session.sandbox, 'git branch -q -f trunk HEAD');
    const error = await push(session, { branch: 'trunk' }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'invalid_input')).toBe(true);
    expect(await fixture.remoteBranch('trunk')).toBe(await fixture.remoteBranch('main'));
  });

  it.each([
    ['a symlink to a bundle outside the workspace', 'ln -sf "$EVIL" .git/patchbay-push.bundle', /symlink/],
    ['a FIFO', 'rm -f .git/patchbay-push.bundle && mkfifo .git/patchbay-push.bundle', /not a regular file/],
  ])('refuses a bundle that is %s', async (_name, swap, pattern) => {
    await commitFile(session, 'one.txt', '1');
    // A host-side bundle carrying the session branch, which the swap points at.
    const evil = join(fixture.root, 'evil.bundle');
    await git(session.workspaceDir, 'bundle', 'create', evil, `refs/heads/${session.branch}`);
    // Stands in for a process racing the harness: swaps the bundle right after the sandbox wrote it.
    const racing: Sandbox = {
      ...session.sandbox,
      exec: async (command: string, options?: ExecOptions) => {
        const result = await session.sandbox.exec(command, options);
        if (command.includes('git bundle create')) {
          // Done on the host: inside the sandbox the evil path does not exist.
          expect((await hostShell(session.workspaceDir, evil)(swap)).exitCode).toBe(0);
        }
        return result;
      },
    };
    const error = await push(session, { sandbox: racing }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toMatch(pattern);
    expect(await fixture.remoteBranch(session.branch)).toBe('');
  });

  it('refuses when the workspace .git was replaced by a symlink', async () => {
    await commitFile(session, 'one.txt', '1');
    const elsewhere = join(fixture.root, 'elsewhere');
    await mkdir(elsewhere);
    const racing: Sandbox = {
      ...session.sandbox,
      exec: async (command: string, options?: ExecOptions) => {
        const result = await session.sandbox.exec(command, options);
        if (command.includes('git bundle create')) {
          await git(fixture.root, 'bundle', 'create', join(elsewhere, 'patchbay-push.bundle'), 'refs/heads/main').catch(
            () => '',
          );
          expect(
            (await hostShell(session.workspaceDir, '')(`mv .git .git-real && ln -s "${elsewhere}" .git`)).exitCode,
          ).toBe(0);
        }
        return result;
      },
    };
    const error = await push(session, { sandbox: racing }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toMatch(/not a directory/);
    expect(await fixture.remoteBranch(session.branch)).toBe('');
  });

  it('never runs the workspace git config on the host (fsmonitor, hooks, sshCommand)', async () => {
    const marker = join(fixture.root, 'host-marker');
    const trap = `touch ${marker}`;
    await sh(
      session.sandbox,
      [
        `git config core.fsmonitor "${trap}"`,
        `git config core.sshCommand "${trap}; ssh"`,
        `git config core.hooksPath /workspace/.git/hooks`,
        `for h in pre-push post-checkout reference-transaction post-index-change; do printf '#!/bin/sh\\n${trap}\\n' > .git/hooks/$h; chmod +x .git/hooks/$h; done`,
      ].join(' && '),
    );
    const commit = await commitFile(session, 'one.txt', '1');
    const result = await push(session);
    // A follow-up run on the same workspace does not run it either.
    const again = await prepareWorkspace({
      repo: fixture.remote,
      branch: session.branch,
      workspaceDir: session.workspaceDir,
      dataDir,
      log: silentLog,
      signal: signal(),
    });

    expect(result.commit).toBe(commit);
    expect(again.reused).toBe(true);
    await expect(lstat(marker)).rejects.toThrow();
    // The trap is live: git run by the host inside the workspace would have sprung it.
    await git(session.workspaceDir, 'status', '--porcelain').catch(() => '');
    expect((await lstat(marker)).isFile()).toBe(true);
  });

  it('fails clearly when the workspace lost the session branch', async () => {
    await sh(session.sandbox, 'git checkout -q -b other && git branch -q -D patchbay/s1');
    const error = await push(session).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toContain('does not exist in the workspace');
  });
});

/** Runs a shell command on the host in the workspace: a process racing the harness. */
function hostShell(cwd: string, evil: string) {
  return (command: string) =>
    new Promise<{ exitCode: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        '/bin/sh',
        ['-c', command],
        { cwd, env: { PATH: '/usr/bin:/bin', EVIL: evil } },
        (error, stdout, stderr) => {
          resolve({ exitCode: error ? 1 : 0, stdout, stderr });
        },
      );
    });
}

describe('pushBranch against a git host that faults (GitHub over HTTP, its faults scripted)', () => {
  let github: FakeGitHub;
  let chaos: ScriptedChaos;
  let env: Record<string, string>;
  beforeEach(async () => {
    chaos = scriptedChaos();
    github = await startFakeGitHub({ chaos });
    await github.addRepo('octo-org', 'web', fixture.remote, 77);
    env = gitBasicAuthEnv(github.gitUrl, 'x-access-token', await mintInstallationToken(github, 77));
  });
  afterEach(() => github.close());

  const pushToGitHub = () =>
    pushBranch({
      sandbox: session.sandbox,
      workspaceDir: session.workspaceDir,
      repo: `${github.gitUrl}/octo-org/web`,
      branch: session.branch,
      dataDir,
      log: silentLog,
      signal: signal(),
      env,
    });
  const hosted = (branch: string) =>
    git(fixture.root, '--git-dir', github.repo('octo-org', 'web').gitDir, 'rev-parse', '--verify', '--quiet', branch);
  const pushes = () =>
    github.gitRequests.filter((r) => r.service === 'git-receive-pack' && !r.path.endsWith('/info/refs'));

  it('takes a push whose answer was lost after GitHub moved the ref as done, and pushes no more', async () => {
    const commit = await commitFile(session, 'feature.txt', 'feature');
    chaos.script({ 'github-git git-receive-pack pack': ['drop-after-update'] });
    expect(await pushToGitHub()).toMatchObject({ commit });
    expect(await hosted(session.branch)).toBe(commit);
    expect(chaos.injected.map((f) => f.kind)).toEqual(['drop-after-update']);
    // The push, and curl's own resend of it (refused: the ref exists); nothing pushed after.
    expect(pushes()).toHaveLength(2);
    expect(github.refused).toEqual([]);
  });

  it('tries a clone, a fetch and a push again when GitHub answered 502 or 500 or dropped the connection', async () => {
    const commit = await commitFile(session, 'feature.txt', 'feature');
    chaos.script({
      'github-git git-upload-pack info/refs': ['bad-gateway'],
      'github-git git-upload-pack pack': ['server-error'],
      'github-git git-receive-pack pack': ['dropped', 'dropped'],
    });
    expect(await pushToGitHub()).toMatchObject({ commit });
    expect(await hosted(session.branch)).toBe(commit);
    expect(chaos.injected.map((f) => f.kind)).toEqual(['bad-gateway', 'server-error', 'dropped', 'dropped']);
    const second = await commitFile(session, 'more.txt', 'more');
    chaos.script({ 'github-git git-upload-pack info/refs': ['dropped', 'dropped'] });
    expect(await pushToGitHub()).toMatchObject({ commit: second });
    expect(await hosted(session.branch)).toBe(second);
    expect(github.refused).toEqual([]);
  });
});
