import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../../sandbox/index.ts';
import { createMergeSubtasksTool } from '../../../src/agent/merge-subtasks-tool.ts';
import { createShellTool } from '../../../src/agent/shell-tool.ts';
import { createToolRegistry, type ToolRegistry } from '../../../src/agent/tool-registry.ts';
import type { ToolContext } from '../../../src/agent/tool.ts';
import type { SubtaskLine } from '../../../src/core/subtasks.ts';
import { commitAll } from '../../../src/git/commit-all.ts';
import { pushBranch } from '../../../src/git/push-branch.ts';
import { bringBranches } from '../../../src/git/subtask-branches.ts';
import { mirrorPath, resolveRepo } from '../../../src/git/mirror.ts';
import { prepareWorkspace } from '../../../src/git/prepare-workspace.ts';
import { SHARED_OBJECTS_PATH } from '../../../sandbox/sandbox.ts';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import { captureLog } from '../../sandbox/sandbox-test-helpers.ts';
import { createProvider, sh, silentLog, startSession, type SessionFixture } from '../../git/sandbox-fixture.ts';

const signal = (): AbortSignal => AbortSignal.timeout(60_000);
const ada = { name: 'Ada Lovelace', email: 'ada@example.com' };

let fixture: RemoteFixture;
let dataDir: string;
let provider: LocalSandboxProvider;
let parent: SessionFixture;
let children: SubtaskLine[];
let registry: ToolRegistry;

beforeEach(async () => {
  fixture = await createRemote();
  await fixture.pushCommit('README.md', '# demo\n\nline two\n', 'Readme with two lines');
  dataDir = join(fixture.root, 'data');
  provider = await createProvider(dataDir);
  parent = await startSession(provider, fixture, dataDir, 'p1', 'patchbay/p1');
  children = [];
  const tool = createMergeSubtasksTool({
    children: async (parentId) => (parentId === 'p1' ? children : []),
    repoOf: async (sessionId) => (sessionId === 'p1' ? fixture.remote : undefined),
    bringBranches: (request) => bringBranches({ ...request, dataDir, log: silentLog }),
  });
  registry = createToolRegistry([tool, createShellTool()]);
});
afterEach(async () => {
  await parent.sandbox.destroy();
  await fixture.cleanup();
});

/** A child session as fan-out runs one: its own workspace and sandbox, its work committed and pushed. */
async function child(index: number, files: Record<string, string>, push = true): Promise<SubtaskLine> {
  const id = `c${index}`;
  const branch = `patchbay/p1-sub-${index}`;
  const session = await startSession(provider, fixture, dataDir, id, branch);
  try {
    for (const [file, content] of Object.entries(files)) await session.sandbox.writeFile(file, content);
    const { commit } = await commitAll(session.sandbox, {
      message: `Sub-task ${index}`,
      author: ada,
      signal: signal(),
    });
    if (push)
      await pushBranch({
        sandbox: session.sandbox,
        workspaceDir: session.workspaceDir,
        repo: fixture.remote,
        branch,
        dataDir,
        log: silentLog,
        signal: signal(),
      });
    const line: SubtaskLine = {
      sessionId: id,
      index,
      title: `Part ${index}`,
      repo: fixture.remote,
      status: 'completed',
      branch,
      commit,
    };
    children.push(line);
    return line;
  } finally {
    await session.sandbox.destroy();
  }
}

const ctx = (): ToolContext => ({ sandbox: parent.sandbox, sessionId: 'p1', signal: signal(), log: silentLog });
const merge = (input: Record<string, unknown> = {}) =>
  registry.execute({ id: 'm', name: 'merge_subtasks', input }, ctx());
const shell = (command: string) => registry.execute({ id: 's', name: 'run_shell', input: { command } }, ctx());
const inParent = (...args: string[]) => git(parent.workspaceDir, ...args);

describe('merge_subtasks', () => {
  it('merges two clean sub-task branches from the remote, one merge commit each, and lists what each brought', async () => {
    await child(1, { 'src/api.ts': 'export const api = 1;\nexport const two = 2;\n' });
    await child(2, { 'client.ts': 'import { api } from "./src/api";\n' });
    const before = await inParent('rev-parse', 'HEAD');

    const output = await merge();

    expect(output.isError ?? false, output.content).toBe(false);
    expect(output.content).toContain('Merged 2 of 2 sub-task branches.');
    expect(output.content).toMatch(
      /Sub-task 1 "Part 1", branch patchbay\/p1-sub-1.*merged as [0-9a-f]{12}, 1 file, \+2 -0/,
    );
    expect(output.content).toContain('src/api.ts +2 -0');
    expect(output.content).toMatch(/Sub-task 2 "Part 2".*1 file, \+1 -0/);
    expect(output.content).toContain('client.ts +1 -0');
    const merges = (await inParent('log', '--merges', '--format=%s', `${before}..HEAD`)).split('\n');
    expect(merges).toEqual(['Merge sub-task 2: Part 2', 'Merge sub-task 1: Part 1']);
    expect(await inParent('rev-parse', 'HEAD^1^1')).toBe(before);
    expect(await sh(parent.sandbox, 'cat src/api.ts client.ts')).toContain('import { api }');
    expect(await inParent('status', '--porcelain')).toBe('');

    // The gathered branch goes out through the harness's push like any session's work.
    const pushed = await pushBranch({
      sandbox: parent.sandbox,
      workspaceDir: parent.workspaceDir,
      repo: fixture.remote,
      branch: parent.branch,
      dataDir,
      log: silentLog,
      signal: signal(),
    });
    expect(await fixture.remoteBranch(parent.branch)).toBe(pushed.commit);
  });

  it('leaves a conflict as git leaves it, lists it, and merges the rest once the agent resolved and committed it', async () => {
    await child(1, { 'README.md': '# demo from one\n\nline two\n' });
    await child(2, { 'README.md': '# demo from two\n\nline two\n' });
    await child(3, { 'three.txt': 'three\n' });

    const first = await merge();

    expect(first.isError ?? false, first.content).toBe(false);
    expect(first.content).toContain('Merged 1 of 1 sub-task branch.');
    expect(first.content).toContain('Sub-task 2 "Part 2" conflicts in 1 file');
    expect(first.content).toContain('\n  README.md\n');
    expect(first.content).toContain('`git add` them, then `git commit --no-edit`');
    expect(first.content).toContain('Not merged yet: Sub-task 3 "Part 3" on patchbay/p1-sub-3.');
    expect(await inParent('rev-parse', 'MERGE_HEAD')).toBe(await fixture.remoteBranch('patchbay/p1-sub-2'));
    expect(await inParent('diff', '--name-only', '--diff-filter=U')).toBe('README.md');
    const marked = await parent.sandbox.readFile('README.md');
    expect(marked).toContain('<<<<<<< HEAD\n# demo from one\n=======\n# demo from two\n>>>>>>> ');
    expect(await sh(parent.sandbox, 'test -e three.txt || echo absent')).toBe('absent\n');

    const again = await merge();
    expect(again.isError).toBe(true);
    expect(again.content).toContain('A merge is still open with conflicts in: README.md');

    await parent.sandbox.writeFile('README.md', '# demo from one and two\n\nline two\n');
    const resolved = await shell('git add README.md && git commit --quiet --no-edit');
    expect(resolved.isError ?? false, resolved.content).toBe(false);

    const rest = await merge();

    expect(rest.isError ?? false, rest.content).toBe(false);
    expect(rest.content).toContain('Merged 1 of 3 sub-task branches.');
    expect(rest.content).toMatch(/Sub-task 1 "Part 1".*already in HEAD/);
    expect(rest.content).toMatch(/Sub-task 2 "Part 2".*already in HEAD/);
    expect(rest.content).toMatch(/Sub-task 3 "Part 3".*merged as [0-9a-f]{12}, 1 file, \+1 -0/);
    expect(await parent.sandbox.readFile('README.md')).toBe('# demo from one and two\n\nline two\n');
    expect(await parent.sandbox.readFile('three.txt')).toBe('three\n');
    expect((await inParent('log', '--merges', '--format=%s')).split('\n')).toEqual([
      'Merge sub-task 3: Part 3',
      'Merge sub-task 2: Part 2',
      'Merge sub-task 1: Part 1',
    ]);
  });

  it('merges only completed children by default: a failed, a cancelled and a still running child that pushed are left out (issue 35)', async () => {
    await child(1, { 'one.txt': 'one\n' });
    (await child(2, { 'two.txt': 'two\n' })).status = 'failed';
    (await child(3, { 'three.txt': 'three\n' })).status = 'cancelled';
    (await child(4, { 'four.txt': 'four\n' })).status = 'running';

    const output = await merge();

    expect(output.isError ?? false, output.content).toBe(false);
    expect(output.content).toContain('Merged 1 of 1 sub-task branch.');
    expect(output.content).toContain('- Sub-task 2 "Part 2" (c2): failed');
    expect(output.content).toContain('- Sub-task 3 "Part 3" (c3): cancelled');
    expect(output.content).toContain('- Sub-task 4 "Part 4" (c4): running');
    expect(await sh(parent.sandbox, 'ls')).toBe('README.md\none.txt\n');

    // Named, a running child is still refused: its branch may move.
    const running = await merge({ sessions: ['c4'] });
    expect(running).toMatchObject({ isError: true });
    expect(running.content).toContain('Sub-task 4 "Part 4" (c4) is still running: wait until it ends.');
    expect(await sh(parent.sandbox, 'test -e four.txt || echo absent')).toBe('absent\n');
  });

  it('refuses a workspace with uncommitted changes and changes nothing (issue 35)', async () => {
    await child(1, { 'one.txt': 'one\n' });
    await parent.sandbox.writeFile('README.md', '# demo, edited\n');
    const before = await inParent('rev-parse', 'HEAD');

    const output = await merge();

    expect(output.isError).toBe(true);
    expect(output.content).toContain('Nothing merged: the workspace has uncommitted changes (README.md).');
    expect(await inParent('rev-parse', 'HEAD')).toBe(before);
    expect(await parent.sandbox.readFile('README.md')).toBe('# demo, edited\n');
    expect(await sh(parent.sandbox, 'test -e one.txt || echo absent')).toBe('absent\n');
  });

  it('refuses with a clear error and changes nothing when a sub-task branch is not on the remote', async () => {
    await child(1, { 'one.txt': 'one\n' });
    await child(2, { 'two.txt': 'two\n' }, false);
    const before = await inParent('rev-parse', 'HEAD');

    const output = await merge({ sessions: ['c1', 'c2'] });

    expect(output.isError).toBe(true);
    expect(output.content).toContain('has no branch patchbay/p1-sub-2');
    expect(output.content).toContain('Nothing was merged.');
    expect(await inParent('rev-parse', 'HEAD')).toBe(before);
    expect(await inParent('for-each-ref', 'refs/patchbay/')).toBe('');
    expect(await inParent('status', '--porcelain')).toBe('');
    expect(await sh(parent.sandbox, 'test -e one.txt || echo absent')).toBe('absent\n');
  });

  it("needs no bundle when the workspace borrows the mirror's objects: the fetched commits are there already", async () => {
    await child(1, { 'one.txt': 'one\n' });
    const workspaceDir = provider.hostPath('p2');
    await prepareWorkspace({
      repo: fixture.remote,
      branch: 'patchbay/p2',
      workspaceDir,
      dataDir,
      log: silentLog,
      signal: signal(),
      sharedObjectsPath: SHARED_OBJECTS_PATH,
    });
    const objects = join(mirrorPath(dataDir, resolveRepo(fixture.remote)), 'objects');
    const shared = await provider.acquire('p2', { network: 'none', sharedObjects: objects });
    const captured = captureLog();
    const tool = createMergeSubtasksTool({
      children: async () => children,
      repoOf: async () => fixture.remote,
      bringBranches: (request) => bringBranches({ ...request, dataDir, log: captured.log }),
    });
    try {
      const output = await tool.execute(
        { sessions: ['c1'] },
        { sandbox: shared, sessionId: 'p1', signal: signal(), log: silentLog },
      );

      expect(output.isError ?? false, output.content).toBe(false);
      expect(output.content).toContain('Merged 1 of 1 sub-task branch.');
      expect(await shared.readFile('one.txt')).toBe('one\n');
      // The sandbox already had the commit through the mirror's objects: no bundle was made.
      const brought = captured.lines().filter((line) => line.msg === 'sub-task branches brought in');
      expect(brought).toEqual([expect.objectContaining({ branches: ['patchbay/p1-sub-1'] })]);
      expect(brought[0]).not.toHaveProperty('bundled');
    } finally {
      await shared.destroy();
    }
  });

  it('names what it cannot merge: a session that is not a child, or a child on another repository', async () => {
    const alone = await merge();
    expect(alone).toEqual({
      content: 'This session has no sub-tasks to merge: spawn_subtasks starts them.',
      isError: true,
    });
    children.push({
      sessionId: 'c9',
      index: 9,
      title: 'Client',
      repo: 'https://github.com/acme/client',
      status: 'completed',
      branch: 'patchbay/p1-sub-9',
    });

    children.push(
      {
        sessionId: 'c4',
        index: 4,
        title: 'Nothing to do',
        repo: fixture.remote,
        status: 'completed',
        branch: 'patchbay/p1-sub-4',
      },
      {
        sessionId: 'c5',
        index: 5,
        title: 'Broke',
        repo: fixture.remote,
        status: 'failed',
        branch: 'patchbay/p1-sub-5',
        error: 'checks failed',
      },
    );
    const stranger = await merge({ sessions: ['nobody'] });
    const elsewhere = await merge({ sessions: ['c9'] });
    const none = await merge();

    expect(stranger).toMatchObject({ isError: true });
    expect(stranger.content).toContain(
      'nobody is not a sub-task of this session. Its sub-tasks: c9 (9. Client), c4 (4. Nothing to do), c5 (5. Broke).',
    );
    expect(elsewhere.content).toContain('is on https://github.com/acme/client: it opens its own pull request');
    expect(none.content).toBe(
      `No completed sub-task of ${fixture.remote} pushed a branch to merge.\n\n` +
        'Left out (name one in sessions to merge what it pushed anyway):\n' +
        '- Sub-task 4 "Nothing to do" (c4): completed without pushing a commit (nothing to merge)\n' +
        '- Sub-task 5 "Broke" (c5): failed (checks failed)',
    );
  });
});
