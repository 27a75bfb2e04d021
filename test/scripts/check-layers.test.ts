import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { importsOf } from '../../scripts/check-layers.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');

/** Runs the check as .ci/run does, on a scratch copy of the tree. */
async function check(root: string): Promise<{ code: number; stderr: string; stdout: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(repo, 'scripts/check-layers.ts'), '--root', root]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the layer check', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'patchbay-layers-'));
    for (const dir of ['src', 'integrations', 'sandbox', 'db', 'README.md'])
      await cp(join(repo, dir), join(root, dir), { recursive: true });
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  const prepend = async (file: string, line: string) =>
    writeFile(join(root, file), `${line}\n${await readFile(join(root, file), 'utf8')}`);

  it('passes on the tree as it is', async () => {
    const result = await check(root);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('fails on an upward type import from core into sessions', async () => {
    await prepend('src/core/events.ts', "import type { SessionStore } from '../sessions/session-store.ts';");
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'src/core/events.ts: imports src/sessions/session-store.ts: core may import no other layer, not sessions',
    );
  });

  it('fails on the harness importing the session store (the old loop) and on an agent → harness import', async () => {
    await prepend('src/harness/run-session.ts', "import type { SessionStore } from '../sessions/session-store.ts';");
    await prepend('src/agent/tool.ts', "export { runSession } from '../harness/run-session.ts';");
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('harness may import core, agent, engines, git, models, sandbox, not sessions');
    expect(result.stderr).toContain('src/agent/tool.ts: imports src/harness/run-session.ts');
  });

  it('fails when one integration imports another, and on a multi-line dynamic import', async () => {
    await prepend('integrations/slack/slack-store.ts', "const m = await import(\n  '../github/github-store.ts'\n);");
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('integrations/slack and integrations/github are siblings');
  });

  it('fails on a package import in core, a file outside every layer, and a stale README table', async () => {
    await prepend('src/core/actor.ts', "import pino from 'pino';");
    await writeFile(join(root, 'src/stray.ts'), 'export const x = 1;\n');
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    await writeFile(
      join(root, 'README.md'),
      readme.replace(
        '| core, agent, engines, git, models, sandbox |',
        '| core, agent, engines, git, models, sandbox, sessions |',
      ),
    );
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('core may import only zod, not pino');
    expect(result.stderr).toContain('src/stray.ts: belongs to no layer');
    expect(result.stderr).toContain('README.md: layer table differs');
  });

  it('fails when two files share a name, such as a port and its adapter', async () => {
    await writeFile(join(root, 'src/sessions/thread-replier.ts'), 'export const adapter = 1;\n');
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('has the name of src/core/thread-replier.ts');
  });

  it('reads every import form', () => {
    const source = [
      "import { a } from './a.ts';",
      "import type {\n  B,\n  C,\n} from '../b.ts';",
      "export { d } from './d.ts';",
      "export * from './e.ts';",
      "import './f.ts';",
      "const g = await import('./g.ts');",
    ].join('\n');
    expect(importsOf(source).sort()).toEqual(['../b.ts', './a.ts', './d.ts', './e.ts', './f.ts', './g.ts']);
  });
});
