import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { engineImageCommands } from '../../../src/engines/engine-packages.ts';
import { copyContainerFs, makeContainerFs, startInContainer, writeImageFiles } from './fake-modal-container.ts';
import { buildImage } from './fake-modal-image.ts';

/** Runs `script` in a fake container on `fsDir` (real bwrap) and returns its output. */
async function run(fsDir: string, script: string): Promise<string> {
  const proc = startInContainer({ fsDir, args: ['sh', '-c', script], workdir: '/workspace', env: {} });
  proc.stdin!.end();
  let out = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  proc.stderr!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolve) => proc.on('close', resolve));
  return out;
}

/**
 * The fake container's /etc: the host's, read-only, plus what the image's build wrote there (the
 * engines' managed files), shown as the build made them: root's, with its modes, and changeable by
 * a root command as in a Modal container, not read-only by the fake's doing.
 */
describe("the fake Modal container's /etc", () => {
  const dirs: string[] = [];
  const fresh = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fake-modal-etc-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  it("shows the image's managed files as built and the host's /etc beside them; root can change the files, nothing else in /etc is written", async () => {
    const build = buildImage(['FROM node:22-bookworm-slim', ...engineImageCommands(['codex'])]);
    expect(build.failure).toBeUndefined();
    const fsDir = await fresh();
    await makeContainerFs(fsDir);
    await writeImageFiles(fsDir, build.files);
    const seen = await run(
      fsDir,
      [
        'stat -c "%a %U %n" /etc/codex /etc/codex/requirements.toml',
        'grep -c allow_managed_hooks_only /etc/codex/requirements.toml',
        'test -r /etc/passwd && echo host-etc',
        'test -e /etc/claude-code || echo no-claude-dir',
        'touch /etc/planted 2>/dev/null || echo etc-read-only',
        'chmod 0644 /etc/codex/requirements.toml && echo "# changed" >> /etc/codex/requirements.toml && echo root-changed-it',
      ].join('; '),
    );
    expect(seen.split('\n')).toEqual([
      '555 root /etc/codex',
      '444 root /etc/codex/requirements.toml',
      '1',
      'host-etc',
      'no-claude-dir',
      'etc-read-only',
      'root-changed-it',
      '',
    ]);
    // The change is the sandbox's own (its tree), kept for its next command and in its snapshot.
    expect(await run(fsDir, 'tail -n 1 /etc/codex/requirements.toml')).toBe('# changed\n');
    const snapshot = await fresh();
    await copyContainerFs(fsDir, join(snapshot, 'fs'));
    expect(await readFile(join(snapshot, 'fs', 'etc', 'codex', 'requirements.toml'), 'utf8')).toMatch(/# changed\n$/);
  });

  it('without files from the build, /etc is the host read-only', async () => {
    const fsDir = await fresh();
    await makeContainerFs(fsDir);
    expect(await run(fsDir, 'test -e /etc/codex || echo none; touch /etc/planted 2>/dev/null || echo read-only')).toBe(
      'none\nread-only\n',
    );
  });
});

describe("the fake Modal's snapshot", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  it('snapshots a tree whose files are removed while it is copied, as Modal snapshots a live sandbox', async () => {
    const root = await mkdtemp(join(tmpdir(), 'fake-modal-snapshot-'));
    dirs.push(root);
    const tree = join(root, 'fs');
    await mkdir(join(tree, 'tmp'), { recursive: true });
    await writeFile(join(tree, 'kept.txt'), 'kept');
    for (let i = 0; i < 500; i++) await writeFile(join(tree, 'tmp', `scratch-${i}`), 'x');
    // A browser clearing its temporary files while the snapshot is taken.
    const clearing = readdir(join(tree, 'tmp')).then(async (names) => {
      for (const name of names) await rm(join(tree, 'tmp', name), { force: true });
    });

    const snapshots = [1, 2, 3].map((n) => join(root, `snapshot-${n}`));
    for (const snapshot of snapshots) await copyContainerFs(tree, snapshot);
    await clearing;

    for (const snapshot of snapshots) expect(await readdir(snapshot)).toEqual(['kept.txt', 'tmp']);
  });
});
