import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { artifactSecretPath, loadArtifactLinks } from '../../src/start/artifact-secret.ts';

const publicUrl = 'https://patchbay.example.com';
const signed = (url: string) => {
  const u = new URL(url);
  return [u.pathname.split('/').pop() ?? '', u.searchParams.get('sig') ?? '', u.searchParams.get('exp') ?? ''] as const;
};

describe('the artifact link secret', () => {
  const dirs: string[] = [];
  const dataDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'patchbay-secret-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  it('is made once in DATA_DIR (0600) and kept: links made before a restart still verify', async () => {
    const dir = await dataDir();
    const first = await loadArtifactLinks({ dataDir: dir, publicUrl });
    const file = artifactSecretPath(dir);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file, 'utf8')).trim()).toMatch(/^[0-9a-f]{64}$/);
    const again = await loadArtifactLinks({ dataDir: dir, publicUrl });
    expect(again.verify(...signed(first.url('abc')))).toBe(true);
    // Another DATA_DIR has another secret: its links do not verify here.
    const other = await loadArtifactLinks({ dataDir: await dataDir(), publicUrl });
    expect(first.verify(...signed(other.url('abc')))).toBe(false);
  });

  it('is ARTIFACT_URL_SECRET when set, and nothing is written', async () => {
    const dir = await dataDir();
    const secret = 'x'.repeat(40);
    const a = await loadArtifactLinks({ dataDir: dir, publicUrl, artifactUrlSecret: secret });
    const b = await loadArtifactLinks({ dataDir: await dataDir(), publicUrl, artifactUrlSecret: secret });
    expect(b.verify(...signed(a.url('abc')))).toBe(true);
    const [, sig, exp] = signed(a.url('abc'));
    expect(b.verify('abd', sig, exp)).toBe(false);
    await expect(stat(artifactSecretPath(dir))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a file that is not a secret, naming it', async () => {
    const dir = await dataDir();
    await writeFile(artifactSecretPath(dir), 'hunter2\n');
    await expect(loadArtifactLinks({ dataDir: dir, publicUrl })).rejects.toThrow(
      /artifact-url-secret is not an artifact link secret/,
    );
  });
});
