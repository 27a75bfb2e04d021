import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDefaultTools } from '../../../src/agent/default-tools.ts';
import { createReadFileTool } from '../../../src/agent/read-file-tool.ts';
import { createToolRegistry } from '../../../src/agent/tool-registry.ts';
import { createToolTestSandbox, type ToolTestSandbox } from './tool-test-sandbox.ts';

describe('file tools on a real sandbox', () => {
  let box: ToolTestSandbox;
  const registry = createToolRegistry(createDefaultTools());
  const call = (name: string, input: unknown) => registry.execute({ id: `call-${name}`, name, input }, box.ctx());

  beforeAll(async () => {
    box = await createToolTestSandbox('file-tools-test');
  });
  afterAll(async () => {
    await box.cleanup();
  });

  it('write_file creates parent directories and read_file returns numbered lines', async () => {
    expect(await call('write_file', { path: 'src/deep/dir/a.ts', content: 'one\ntwo\nthree\n' })).toEqual({
      content: 'Wrote src/deep/dir/a.ts (14 bytes, 3 lines).',
    });
    expect(await box.sh('cat src/deep/dir/a.ts')).toBe('one\ntwo\nthree\n');
    expect(await call('read_file', { path: 'src/deep/dir/a.ts' })).toEqual({ content: '1\tone\n2\ttwo\n3\tthree' });
    // An absolute path inside the workspace is accepted too.
    expect(await call('read_file', { path: '/workspace/src/deep/dir/a.ts', offset: 2, limit: 1 })).toEqual({
      content: '2\ttwo\n(Showing lines 2-2 of 3 in src/deep/dir/a.ts. Use offset=3 to read on.)',
    });
  });

  it('read_file cuts a large file and says where to continue', async () => {
    const lines = Array.from({ length: 5_000 }, (_, i) => `line number ${i + 1} ${'x'.repeat(40)}`);
    await call('write_file', { path: 'big.txt', content: `${lines.join('\n')}\n` });
    const output = await call('read_file', { path: 'big.txt' });
    expect(output.isError).toBeUndefined();
    expect(output.content.length).toBeLessThanOrEqual(30_000 + 200);
    expect(output.content).toMatch(/^ {3}1\tline number 1 x/);
    const footer = output.content.split('\n').at(-1)!;
    const shown = Number(/Showing lines 1-(\d+) of 5000 in big\.txt\. Use offset=(\d+) to read on\./.exec(footer)?.[1]);
    expect(shown).toBeGreaterThan(400);
    expect(output.content).toContain(`${shown}\tline number ${shown} x`);
    expect(output.content).not.toContain(`line number ${shown + 1} x`);
    // A custom line limit stops earlier, and one huge line is cut.
    const small = createReadFileTool({ defaultLineLimit: 10, maxLineChars: 20 });
    await box.sh(`printf '%s\\n' "$(head -c 100 /dev/zero | tr '\\0' y)" > long.txt`);
    const longLine = await small.execute({ path: 'long.txt' }, box.ctx());
    expect(longLine.content).toBe(`1\t${'y'.repeat(20)} [... line cut: 80 more characters]`);
    expect((await small.execute({ path: 'big.txt' }, box.ctx())).content.split('\n').at(-1)).toBe(
      '(Showing lines 1-10 of 5000 in big.txt. Use offset=11 to read on.)',
    );
  });

  it('read_file reports a missing file and an offset past the end as errors', async () => {
    const missing = await call('read_file', { path: 'nope.txt' });
    expect(missing.isError).toBe(true);
    expect(missing.content).toMatch(/nope\.txt: no such file or directory/);
    expect(await call('read_file', { path: 'src/deep/dir/a.ts', offset: 9 })).toEqual({
      isError: true,
      content: 'offset 9 is past the end of src/deep/dir/a.ts, which has 3 lines.',
    });
  });

  it('edit_file replaces one exact match and leaves the rest of the file alone', async () => {
    await call('write_file', { path: 'edit.ts', content: 'const a = 1;\nconst b = 2;\nconst price = "$5";\n' });
    expect(
      await call('edit_file', { path: 'edit.ts', old_string: 'const b = 2;', new_string: 'const b = "$&$1";' }),
    ).toEqual({
      content: 'Replaced 1 occurrence in edit.ts (first at line 2).',
    });
    expect(await box.sh('cat edit.ts')).toBe('const a = 1;\nconst b = "$&$1";\nconst price = "$5";\n');
  });

  it('edit_file explains zero matches with a hint', async () => {
    await call('write_file', { path: 'hint.ts', content: 'function f() {\n    return 1;\n}\n' });
    const whitespace = await call('edit_file', {
      path: 'hint.ts',
      old_string: 'function f() {\n  return 1;\n}',
      new_string: 'x',
    });
    expect(whitespace).toEqual({
      isError: true,
      content:
        'old_string was not found in hint.ts. It matches if whitespace is ignored near line 1: copy the exact indentation and line breaks from read_file.',
    });
    const stale = await call('edit_file', {
      path: 'hint.ts',
      old_string: '    return 1;\n    // gone',
      new_string: 'x',
    });
    expect(stale.content).toBe(
      'old_string was not found in hint.ts. Its first line appears at line 2, but the text after it differs. Read the file again and copy the exact text.',
    );
    const absent = await call('edit_file', { path: 'hint.ts', old_string: 'nothing like this', new_string: 'x' });
    expect(absent.content).toMatch(/not found in hint\.ts\. Read the file again with read_file/);
    expect(await box.sh('cat hint.ts')).toBe('function f() {\n    return 1;\n}\n');
  });

  it('edit_file refuses several matches unless replace_all, saying how many and where', async () => {
    await call('write_file', { path: 'many.txt', content: 'foo\nbar\nfoo\nbaz\nfoo\n' });
    expect(await call('edit_file', { path: 'many.txt', old_string: 'foo', new_string: 'qux' })).toEqual({
      isError: true,
      content:
        'old_string occurs 3 times in many.txt (lines 1, 3, 5). Include more surrounding lines to make it unique, or set replace_all to true to change every occurrence.',
    });
    expect(await box.sh('cat many.txt')).toBe('foo\nbar\nfoo\nbaz\nfoo\n');
    expect(
      await call('edit_file', { path: 'many.txt', old_string: 'foo', new_string: 'qux', replace_all: true }),
    ).toEqual({
      content: 'Replaced 3 occurrences in many.txt (first at line 1).',
    });
    expect(await box.sh('cat many.txt')).toBe('qux\nbar\nqux\nbaz\nqux\n');
  });

  it('edit_file matches across CRLF line endings', async () => {
    await call('write_file', { path: 'crlf.txt', content: 'a\r\nb\r\nc\r\n' });
    expect(
      (await call('edit_file', { path: 'crlf.txt', old_string: 'a\nb', new_string: 'A\nB' })).isError,
    ).toBeUndefined();
    expect(await box.sh('od -c crlf.txt | head -1')).toMatch(/A\s+\\r\s+\\n\s+B\s+\\r\s+\\n\s+c/);
  });

  it('list_files lists one level or the whole tree', async () => {
    await box.sh(
      'mkdir -p tree/sub && printf 12345 > tree/a.txt && printf x > tree/sub/b.txt && ln -s a.txt tree/link',
    );
    expect(await call('list_files', { path: 'tree' })).toEqual({
      content: 'tree/a.txt (5 bytes)\ntree/link (symlink)\ntree/sub/',
    });
    expect(await call('list_files', { path: 'tree', recursive: true })).toEqual({
      content: 'tree/a.txt (5 bytes)\ntree/link (symlink)\ntree/sub/\ntree/sub/b.txt (1 bytes)',
    });
    const root = await call('list_files', {});
    expect(root.content.split('\n')).toEqual(expect.arrayContaining(['.git/', 'tree/', 'edit.ts (51 bytes)']));
  });

  it('refuses paths outside the workspace as error results the model sees', async () => {
    for (const [name, input] of [
      ['read_file', { path: '/etc/passwd' }],
      ['write_file', { path: '/tmp/escape.txt', content: 'x' }],
      ['edit_file', { path: '../outside.txt', old_string: 'a', new_string: 'b' }],
      ['list_files', { path: '/' }],
      ['search', { pattern: 'root', path: '/etc' }],
      ['git_diff', { path: '../..' }],
      ['read_file', { path: '~/.ssh/id_rsa' }],
    ] as const) {
      const output = await call(name, input);
      expect(output.isError, name).toBe(true);
      expect(output.content, name).toMatch(
        /is outside the workspace \(\/workspace\)\. Use a path relative to the workspace root/,
      );
    }
    // The sandbox's own check stands behind the early one: a symlink pointing away is refused too.
    await box.sh('ln -s /etc/hostname escape-link');
    const viaLink = await call('read_file', { path: 'escape-link' });
    expect(viaLink).toEqual({
      isError: true,
      content: 'path refused: "escape-link" resolves outside the workspace through a symlink',
    });
  });

  it('read_file, write_file and edit_file refuse a FIFO with an error, within the call time limit, without blocking', async () => {
    // A FIFO nobody writes to: a blocking open would never return. The registry's limit is the
    // backstop; the refusal must come from the type check, not from the limit.
    await box.sh('mkfifo pipe');
    const limited = createToolRegistry(createDefaultTools(), { callTimeLimitMs: 20_000 });
    const run = (name: string, input: unknown) => limited.execute({ id: `fifo-${name}`, name, input }, box.ctx());
    expect(await run('read_file', { path: 'pipe' })).toEqual({
      isError: true,
      content: 'pipe: is not a regular file (fifo); only regular files can be read',
    });
    expect(await run('edit_file', { path: 'pipe', old_string: 'a', new_string: 'b' })).toEqual({
      isError: true,
      content: 'pipe: is not a regular file (fifo); only regular files can be read',
    });
    expect(await run('write_file', { path: 'pipe', content: 'x' })).toEqual({
      isError: true,
      content: 'pipe: is not a regular file (fifo); only regular files can be written',
    });
    // Still a FIFO: nothing replaced or truncated it.
    expect(await box.sh('test -p pipe && echo fifo')).toBe('fifo\n');
  });
});
