import { join } from 'node:path';
import { lstat } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/index.ts';
import { isPatchbayError } from '../../src/core/errors.ts';
import { commitAll, withCoAuthors } from '../../src/git/commit-all.ts';
import { createRemote, git, type RemoteFixture } from './git-fixture.ts';
import { createProvider, sh, startSession, type SessionFixture } from './sandbox-fixture.ts';

const signal = (): AbortSignal => AbortSignal.timeout(30_000);
const ada = { name: 'Ada Lovelace', email: 'ada@example.com' };

let fixture: RemoteFixture;
let provider: LocalSandboxProvider;
let session: SessionFixture;
beforeEach(async () => {
  fixture = await createRemote();
  const dataDir = join(fixture.root, 'data');
  provider = await createProvider(dataDir);
  session = await startSession(provider, fixture, dataDir, 's1');
});
afterEach(async () => {
  await session.sandbox.destroy();
  await fixture.cleanup();
});

describe('commitAll (in the real bubblewrap sandbox)', () => {
  it('commits every change with the author, Patchbay as committer and deduplicated co-author trailers', async () => {
    await session.sandbox.writeFile('src/new.ts', 'export const x = 1;\n');
    await sh(session.sandbox, 'printf "# changed\\n" > README.md');
    const message = 'Add x\n\n#123 is fixed; $(touch /workspace/pwned) `id` "quoted" \'single\'';

    const result = await commitAll(session.sandbox, {
      message,
      author: ada,
      coAuthors: [
        { name: 'Bob', email: 'bob@example.com' },
        { name: 'Ada again', email: 'ADA@example.com' },
        { name: 'Bob twice', email: 'bob@example.com' },
        { name: 'Carol\nInjected: trailer', email: 'carol@example.com' },
      ],
      signal: signal(),
    });

    const ws = session.workspaceDir;
    expect(result.commit).toBe(await git(ws, 'rev-parse', 'HEAD'));
    expect(await git(ws, 'log', '-1', '--format=%an <%ae>|%cn <%ce>')).toBe(
      'Ada Lovelace <ada@example.com>|Patchbay <patchbay@users.noreply.github.com>',
    );
    expect(await git(ws, 'log', '-1', '--format=%B')).toBe(
      `${message}\n\nCo-authored-by: Bob <bob@example.com>\nCo-authored-by: Carol Injected: trailer <carol@example.com>`,
    );
    expect(await git(ws, 'show', '--name-only', '--format=', 'HEAD')).toBe('README.md\nsrc/new.ts');
    expect(await git(ws, 'status', '--porcelain')).toBe('');
    expect(await git(ws, 'rev-parse', 'HEAD~1')).toBe(session.prepared.baseCommit);
    await expect(lstat(join(ws, 'pwned'))).rejects.toThrow();
  });

  it("adds the author's Signed-off-by after the co-authors when the repository checks the DCO (issue 40)", async () => {
    await session.sandbox.writeFile('signed.txt', 'x\n');
    await commitAll(session.sandbox, {
      message: 'Sign it',
      author: ada,
      coAuthors: [{ name: 'Bob', email: 'bob@example.com' }],
      signOff: true,
      signal: signal(),
    });
    expect(await git(session.workspaceDir, 'log', '-1', '--format=%B')).toBe(
      'Sign it\n\nCo-authored-by: Bob <bob@example.com>\nSigned-off-by: Ada Lovelace <ada@example.com>',
    );
    expect(await git(session.workspaceDir, 'log', '-1', '--format=%(trailers:key=Signed-off-by,valueonly)')).toBe(
      'Ada Lovelace <ada@example.com>',
    );
  });

  it('reports nothing to commit without making a commit', async () => {
    const result = await commitAll(session.sandbox, { message: 'Nothing', author: ada, signal: signal() });
    expect(result).toEqual({ commit: undefined });
    expect(await git(session.workspaceDir, 'rev-parse', 'HEAD')).toBe(session.prepared.baseCommit);
  });

  it('runs no hooks the model installed', async () => {
    await sh(
      session.sandbox,
      [
        'mkdir -p my-hooks',
        'for h in .git/hooks/pre-commit .git/hooks/commit-msg my-hooks/pre-commit; do printf "#!/bin/sh\\ntouch /workspace/hook-ran\\nexit 1\\n" > $h; chmod +x $h; done',
        'git config core.hooksPath my-hooks',
      ].join(' && '),
    );
    await session.sandbox.writeFile('a.txt', 'a');
    const result = await commitAll(session.sandbox, { message: 'With hooks around', author: ada, signal: signal() });
    expect(result.commit).toMatch(/^[0-9a-f]{40}$/);
    await expect(lstat(join(session.workspaceDir, 'hook-ran'))).rejects.toThrow();
  });

  it('refuses to commit when the workspace left the session branch', async () => {
    await sh(session.sandbox, 'git checkout -q -b elsewhere');
    await session.sandbox.writeFile('a.txt', 'a');
    const error = await commitAll(session.sandbox, {
      message: 'x',
      author: ada,
      branch: session.branch,
      signal: signal(),
    }).catch((e: unknown) => e);
    expect(isPatchbayError(error, 'git_failed')).toBe(true);
    expect((error as Error).message).toContain('expected refs/heads/patchbay/s1');
    expect(await git(session.workspaceDir, 'rev-parse', 'HEAD')).toBe(session.prepared.baseCommit);
  });

  it('refuses an empty message and a malformed identity', async () => {
    const empty = await commitAll(session.sandbox, { message: '  \n', author: ada, signal: signal() }).catch(
      (e: unknown) => e,
    );
    expect(isPatchbayError(empty, 'invalid_input')).toBe(true);
    const bad = await commitAll(session.sandbox, {
      message: 'x',
      author: { name: 'Eve', email: 'eve>@example.com' },
      signal: signal(),
    }).catch((e: unknown) => e);
    expect(isPatchbayError(bad, 'invalid_input')).toBe(true);
  });
});

describe('withCoAuthors', () => {
  it.each([
    ['Subject', [], 'Subject\n'],
    ['Subject\n\n', [{ name: 'Bob', email: 'bob@x.io' }], 'Subject\n\nCo-authored-by: Bob <bob@x.io>\n'],
    [
      'Subject\n\nBody text.\n\nSigned-off-by: Ada <ada@example.com>',
      [{ name: 'Bob', email: 'bob@x.io' }],
      'Subject\n\nBody text.\n\nSigned-off-by: Ada <ada@example.com>\nCo-authored-by: Bob <bob@x.io>\n',
    ],
    ['Fix: the thing', [{ name: 'Bob', email: 'bob@x.io' }], 'Fix: the thing\n\nCo-authored-by: Bob <bob@x.io>\n'],
    ['Subject', [{ name: 'Me', email: 'Ada@Example.com' }], 'Subject\n'],
  ])('%j + %j', (message, coAuthors, expected) => {
    expect(withCoAuthors(message, ada, coAuthors)).toBe(expected);
  });
});
