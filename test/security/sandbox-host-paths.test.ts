import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
import { SHARED_OBJECTS_PATH } from '../../sandbox/sandbox.ts';
import { makeProvider } from '../sandbox/sandbox-test-helpers.ts';

const asRoot = process.getuid?.() === 0;

/**
 * The review found the workspace's host path inside the sandbox (PWD in /proc/1/environ): these
 * probes read every process's environment and command line, the working directories and the mount
 * table (a bind's root field is its source's path), and look for the data directory's host path,
 * with and without the cgroup launcher in between.
 */
describe('security probes: host paths stay out of the sandbox', () => {
  for (const limitMode of ['auto', 'rlimit'] as const) {
    describe(`with limits by ${limitMode}`, () => {
      let provider: LocalSandboxProvider;
      let dataDir: string;
      let cleanup: () => Promise<void>;
      let sandbox: Sandbox;

      beforeAll(async () => {
        ({ provider, dataDir, cleanup } = await makeProvider({ limitMode }));
        sandbox = await provider.acquire('security-host-paths', { network: 'none' });
      });
      afterAll(async () => {
        await sandbox.destroy();
        await cleanup();
      });

      it('shows no host path in any process environment or command line', async () => {
        const result = await sandbox.exec(
          'for p in /proc/[0-9]*; do tr "\\0" "\\n" < $p/environ; tr "\\0" " " < $p/cmdline; echo; done 2>/dev/null',
        );
        expect(result.exitCode).toBe(0);
        expect(result.stdout).toContain('HOME=/tmp/home');
        expect(result.stdout).not.toContain(dataDir);
        // The launcher's own PWD is '/', and the command's is inside the sandbox.
        expect(result.stdout).not.toMatch(/^(PWD|OLDPWD)=(?!\/workspace|\/$)/m);
      });

      it('shows no host path in the mount table: the workspace is the root of a file system of its own', async () => {
        const result = await sandbox.exec('cat /proc/self/mountinfo /proc/1/mountinfo');
        expect(result.exitCode).toBe(0);
        // Fields: id, parent, dev, root (the mounted directory on its file system), mount point, …
        const mounts = result.stdout
          .trim()
          .split('\n')
          .map((line) => line.split(' '));
        const workspace = mounts.find((fields) => fields[4] === '/workspace');
        if (asRoot) {
          expect(provider.diskQuota).toBe('filesystem');
          expect(workspace?.[3]).toBe('/');
          expect(result.stdout).not.toContain(dataDir);
        } else {
          // A non-root server cannot mount: the workspace is a bind, whose root is its host path.
          expect(provider.diskQuota).toBe('watch');
          expect(mounts.filter((fields) => fields.join(' ').includes(dataDir)).map((fields) => fields[4])).toEqual([
            '/workspace',
            '/workspace',
          ]);
        }
      });

      it('shows no host path as any process working directory or root', async () => {
        const result = await sandbox.exec(
          'for p in /proc/[0-9]*; do readlink $p/cwd $p/root; done 2>/dev/null; pwd -P',
        );
        expect(result.stdout).not.toContain(dataDir);
        expect(
          result.stdout
            .trim()
            .split('\n')
            .every((line) => line === '/' || line.startsWith('/workspace')),
        ).toBe(true);
      });
    });
  }
});

/**
 * The two binds a sandbox may have besides its workspace: the repository mirror's objects (a
 * shared clone's alternates) and the egress proxy's socket. A bind's root field in the mount
 * table is its source's path on its file system, so as root each comes from a file system of its
 * own (see SECURITY.md); these probes look for every host path the provider knows of.
 */
describe('security probes: the mirror objects and the egress socket show no host path', () => {
  let provider: LocalSandboxProvider;
  let dataDir: string;
  let cleanup: () => Promise<void>;
  let sandbox: Sandbox;
  let mirrorObjects: string;
  const sessionId = 'security-host-paths-binds';

  beforeAll(async () => {
    ({ provider, dataDir, cleanup } = await makeProvider({
      egress: { policy: { rules: [], protectedEndpoints: [] } },
    }));
    mirrorObjects = path.join(dataDir, 'mirrors', 'acme', 'widgets.git', 'objects');
    await mkdir(path.join(mirrorObjects, 'pack'), { recursive: true });
    await writeFile(path.join(mirrorObjects, 'pack', 'marker'), 'mirror-objects\n');
    sandbox = await provider.acquire(sessionId, { network: 'proxy', sharedObjects: mirrorObjects });
  });
  afterAll(async () => {
    await sandbox.destroy();
    await provider.close();
    await cleanup();
  });

  /** Every host path a sandbox could learn: the data dir, the temp dir's Patchbay entries, the workspace, the mirror. */
  const hostPaths = (): string[] => [
    dataDir,
    provider.hostPath(sessionId),
    mirrorObjects,
    `${tmpdir()}/patchbay-`,
    'patchbay-egress-',
    'patchbay-stage-',
    'mirrors/acme',
  ];

  it('shows the mirror objects and the egress socket inside', async () => {
    const result = await sandbox.exec(`cat ${SHARED_OBJECTS_PATH}/pack/marker; test -S /run/patchbay/egress.sock`);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('mirror-objects\n');
  });

  it('shows no host path in the mount table, environments, working directories or pwd -P', async () => {
    const result = await sandbox.exec(
      'cat /proc/self/mountinfo /proc/1/mountinfo; tr "\\0" "\\n" < /proc/1/environ; echo "PWD=$PWD"; ' +
        'for p in /proc/[0-9]*; do tr "\\0" "\\n" < $p/environ; readlink $p/cwd $p/root; done 2>/dev/null; pwd -P',
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(`${SHARED_OBJECTS_PATH} `);
    expect(result.stdout).toContain('/run/patchbay/egress.sock ');
    const shown = hostPaths().filter((hostPath) => result.stdout.includes(hostPath));
    if (asRoot) expect(shown).toEqual([]);
    // A non-root server cannot mount: each bind's root is its host path (SECURITY.md says so).
    else expect(shown).toContain(mirrorObjects);
  });
});
