import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDefaultTools } from '../../../src/agent/default-tools.ts';
import { createSearchTool } from '../../../src/agent/search-tool.ts';
import { createShellTool } from '../../../src/agent/shell-tool.ts';
import { createToolRegistry } from '../../../src/agent/tool-registry.ts';
import { createToolTestSandbox, type ToolTestSandbox } from './tool-test-sandbox.ts';

describe('shell, search, git and ask_user tools on a real sandbox', () => {
  let box: ToolTestSandbox;
  const registry = createToolRegistry(createDefaultTools());
  const call = (name: string, input: unknown, signal?: AbortSignal) =>
    registry.execute({ id: `call-${name}`, name, input }, box.ctx(signal));

  beforeAll(async () => {
    box = await createToolTestSandbox('shell-tools-test');
    await box.sh(
      [
        'mkdir -p src docs',
        `printf 'export const Alpha = 1;\\nexport const beta = "it'"'"'s";\\n' > src/a.ts`,
        `printf 'alpha in docs\\n' > docs/readme.md`,
        'git add -A && git commit -q -m initial',
      ].join(' && '),
    );
  });
  afterAll(async () => {
    await box.cleanup();
  });

  it('run_shell returns exit code, stdout and stderr', async () => {
    expect(await call('run_shell', { command: 'echo out; echo err >&2; pwd' })).toEqual({
      content: 'Exit code: 0\nstdout:\nout\n/workspace\n\nstderr:\nerr\n',
      isError: false,
    });
    expect(await call('run_shell', { command: 'exit 3' })).toEqual({ content: 'Exit code: 3', isError: true });
  });

  it('a refused command reaches the model as an error result and never runs', async () => {
    const output = await call('run_shell', { command: 'touch ran.txt && git push --force origin main' });
    expect(output.isError).toBe(true);
    expect(output.content).toMatch(/^Command refused: Force-pushing .* the harness/);
    const sudo = await call('run_shell', { command: 'cd src; sudo touch ../ran.txt' });
    expect(sudo.content).toMatch(/^Command refused: sudo\/doas\/su are refused/);
    expect(await box.sh('ls ran.txt 2>/dev/null || echo absent')).toBe('absent\n');
  });

  it('run_shell caps output and says exactly what was cut', async () => {
    const shell = createShellTool({ maxOutputChars: 2_000 });
    const output = await shell.execute({ command: 'seq 1 5000; echo done >&2' }, box.ctx());
    expect(output.isError).toBe(false);
    // The whole answer fits the limit: stderr ("done\n") keeps its 5 characters, stdout the rest,
    // its cut note included, and the cut it reports is exactly what is missing.
    expect(output.content.length).toBeLessThanOrEqual(2_000);
    const stdout = Array.from({ length: 5_000 }, (_, i) => `${i + 1}\n`).join('');
    const note =
      /\n\[\.\.\. (\d+) characters \((\d+) lines\) cut from the middle of (\d+); redirect the output to a file[^\]]*\]\n/.exec(
        output.content,
      )!;
    expect(Number(note[3])).toBe(stdout.length);
    const shown = output.content.slice('Exit code: 0\nstdout:\n'.length, output.content.indexOf('\nstderr:'));
    const [head, tail] = shown.split(note[0]) as [string, string];
    expect(stdout.startsWith(head) && stdout.endsWith(tail)).toBe(true);
    const cut = stdout.slice(head.length, stdout.length - tail.length);
    expect(Number(note[1])).toBe(cut.length);
    expect(Number(note[2])).toBe(cut.split('\n').length - 1);
    expect(output.content).toMatch(/^Exit code: 0\nstdout:\n1\n2\n3\n/);
    expect(output.content).toMatch(/4999\n5000\n\nstderr:\ndone\n$/);
  });

  it('run_shell reports a timeout and an abort clearly', async () => {
    const shell = createShellTool({ timeoutMs: 500, maxTimeoutMs: 1_000 });
    const timedOut = await shell.execute({ command: 'echo started; sleep 30', timeout: 60 }, box.ctx());
    expect(timedOut.isError).toBe(true);
    expect(timedOut.content).toMatch(/^Command timed out after 1s and was killed\./);
    expect(timedOut.content).toContain('stdout:\nstarted');

    const controller = new AbortController();
    const running = call('run_shell', { command: 'sleep 30' }, controller.signal);
    setTimeout(() => controller.abort(), 300);
    expect(await running).toEqual({
      content: 'Command aborted: the run was stopped and the command was killed.',
      isError: true,
    });
  });

  it('search finds matches, honours case, glob and path, and quotes its arguments safely', async () => {
    expect(await call('search', { pattern: 'Alpha' })).toEqual({ content: 'src/a.ts:1:export const Alpha = 1;' });
    const insensitive = await call('search', { pattern: 'alpha', case_insensitive: true });
    expect(insensitive.content.split('\n').sort()).toEqual([
      'docs/readme.md:1:alpha in docs',
      'src/a.ts:1:export const Alpha = 1;',
    ]);
    expect(await call('search', { pattern: 'alpha', case_insensitive: true, glob: '*.md' })).toEqual({
      content: 'docs/readme.md:1:alpha in docs',
    });
    expect(await call('search', { pattern: 'alpha', case_insensitive: true, path: 'docs' })).toEqual({
      content: 'docs/readme.md:1:alpha in docs',
    });
    expect(await call('search', { pattern: "it's" })).toEqual({ content: `src/a.ts:2:export const beta = "it's";` });
    expect(await call('search', { pattern: '$(touch pwned.txt)', glob: '*.ts' })).toEqual({
      content: 'No matches for /$(touch pwned.txt)/ in . (glob *.ts).',
    });
    expect(await call('search', { pattern: 'x', glob: '`touch pwned2.txt`' })).toEqual({
      content:
        'No files to search in . (glob `touch pwned2.txt`): nothing there matches, or ripgrep skips it (.gitignored or binary).',
    });
    expect(await box.sh('ls pwned.txt pwned2.txt 2>/dev/null || echo absent')).toBe('absent\n');
  });

  it('search looks into hidden files but not into .git', async () => {
    await box.sh('mkdir -p .github && printf "name: Tool Test CI\n" > .github/ci.yml');
    // .git/config holds user.name "Tool Test" too; only the workflow file may match.
    expect(await call('search', { pattern: 'Tool Test' })).toEqual({ content: '.github/ci.yml:1:name: Tool Test CI' });
    expect(await call('search', { pattern: 'Tool Test', glob: '*.yml' })).toEqual({
      content: '.github/ci.yml:1:name: Tool Test CI',
    });
    await box.sh('rm -r .github');
  });

  it('search with no match is not an error; a bad pattern is', async () => {
    expect(await call('search', { pattern: 'zzz_not_here' })).toEqual({
      content: 'No matches for /zzz_not_here/ in ..',
    });
    const bad = await call('search', { pattern: '(unclosed' });
    expect(bad.isError).toBe(true);
    expect(bad.content).toMatch(/^Search failed \(rg exit 2\): regex parse error/);
  });

  it('search caps the number of matching lines with a note', async () => {
    await box.sh('seq 1 300 | sed "s/^/needle /" > needles.txt');
    const search = createSearchTool({ maxResults: 50 });
    const output = await search.execute({ pattern: 'needle', path: 'needles.txt' }, box.ctx());
    const lines = output.content.split('\n');
    expect(lines).toHaveLength(51);
    expect(lines[0]).toBe('needles.txt:1:needle 1');
    expect(lines[50]).toBe('(Showing 50 of 300 matching lines; narrow the pattern, path or glob to see the rest.)');
    const narrow = createSearchTool({ maxResults: 50, maxOutputChars: 200 });
    const byChars = (await narrow.execute({ pattern: 'needle', path: 'needles.txt' }, box.ctx())).content.split('\n');
    // "needles.txt:1:needle 1" and its newline take 23 characters; eight such lines fit in 200, nine do not.
    expect(byChars.slice(0, -1)).toEqual(Array.from({ length: 8 }, (_, i) => `needles.txt:${i + 1}:needle ${i + 1}`));
    expect(byChars.at(-1)).toBe('(Showing 8 of 300 matching lines; narrow the pattern, path or glob to see the rest.)');
    await box.sh('rm needles.txt');
  });

  it('git_status and git_diff show unstaged, staged and per-path changes', async () => {
    expect(await call('git_status', {})).toEqual({ content: '## main\nWorking tree clean.' });
    await call('edit_file', { path: 'src/a.ts', old_string: 'Alpha = 1', new_string: 'Alpha = 2' });
    await call('write_file', { path: 'docs/new.md', content: 'new\n' });
    expect(await call('git_status', {})).toEqual({ content: '## main\n M src/a.ts\n?? docs/new.md' });

    const diff = await call('git_diff', {});
    expect(diff.content).toContain('diff --git a/src/a.ts b/src/a.ts');
    expect(diff.content).toContain('-export const Alpha = 1;\n+export const Alpha = 2;');
    expect(await call('git_diff', { staged: true })).toEqual({
      content: 'No staged changes. Untracked files are not diffed; see git_status.',
    });
    expect(await call('git_diff', { path: 'docs' })).toEqual({
      content: 'No unstaged changes in docs. Untracked files are not diffed; see git_status.',
    });

    await box.sh('git add src/a.ts');
    expect((await call('git_diff', { staged: true })).content).toContain('+export const Alpha = 2;');
    expect((await call('git_diff', { path: 'src/a.ts' })).content).toBe(
      'No unstaged changes in src/a.ts. Untracked files are not diffed; see git_status.',
    );
  });

  it("git_diff output past the run's limit is cut once, with one note naming how to see the rest", async () => {
    await box.sh('seq 1 5000 > big.txt && git add big.txt && git commit -qm big && seq 1 5000 | sed s/$/x/ > big.txt');
    try {
      const diff = await registry.execute(
        { id: 'big-diff', name: 'git_diff', input: {} },
        { ...box.ctx(), maxOutputChars: 3_000 },
      );
      expect(diff.content.length).toBeLessThanOrEqual(3_000);
      expect(diff.content.match(/cut from the middle of/g)).toHaveLength(1);
      // The note speaks of the whole diff: nothing cut it before the one cut.
      const whole = (await box.sh('git diff --no-color --no-ext-diff')).length;
      expect(diff.content).toMatch(
        new RegExp(
          `\\[\\.\\.\\. \\d+ characters \\(\\d+ lines\\) cut from the middle of ${whole}; pass path to diff one file or directory at a time \\.\\.\\.\\]`,
        ),
      );
      expect(diff.content.startsWith('diff --git a/big.txt b/big.txt')).toBe(true);
      expect(diff).not.toHaveProperty('cutHint');
    } finally {
      await box.sh('git reset -q --hard HEAD~1');
    }
  });

  it('git tools report a workspace that is not a repository as an error', async () => {
    await box.sh('mv .git .git-away');
    try {
      const status = await call('git_status', {});
      expect(status.isError).toBe(true);
      expect(status.content).toMatch(
        /^git status --short --branch --untracked-files=all failed \(exit 128\): fatal: not a git repository/,
      );
    } finally {
      await box.sh('mv .git-away .git');
    }
  });

  it('ask_user hands the question to the runner through control', async () => {
    expect(
      await call('ask_user', { question: 'Which database?', choices: ['Postgres', 'SQLite'], recommended: 'Postgres' }),
    ).toEqual({
      content: 'Question sent; waiting for an answer.',
      control: { kind: 'ask', question: 'Which database?', choices: ['Postgres', 'SQLite'], recommended: 'Postgres' },
    });
    expect(await call('ask_user', { question: 'Should I also update the docs?' })).toEqual({
      content: 'Question sent; waiting for an answer.',
      control: { kind: 'ask', question: 'Should I also update the docs?' },
    });
    const bad = await call('ask_user', { question: 'Which?', choices: ['a', 'b'], recommended: 'c' });
    expect(bad).toEqual({
      isError: true,
      content:
        'Invalid input for ask_user:\n- recommended: recommended must be one of choices\nFix the input and call the tool again.',
    });
  });
});
