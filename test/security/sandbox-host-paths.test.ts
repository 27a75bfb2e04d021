import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
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
