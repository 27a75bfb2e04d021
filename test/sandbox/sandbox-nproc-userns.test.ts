import { spawn, type ChildProcess } from 'node:child_process';
import { chown, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir } from './sandbox-test-helpers.ts';

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
/** Runs as an unprivileged uid: the kernel exempts uid 0 from RLIMIT_NPROC. */
const unprivileged = asRoot ? { uid: NOBODY, gid: NOBODY } : {};

describe('RLIMIT_NPROC inside the sandbox, with rlimits alone', () => {
  const hostProcesses: ChildProcess[] = [];
  let dataDir: string | undefined;
  afterAll(async () => {
    for (const child of hostProcesses) child.kill('SIGKILL');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("counts only the command's own processes: the same uid's 100 host processes do not use up its 64, and a fork bomb is held and ended", {
    timeout: 180_000,
  }, async () => {
    dataDir = await makeTempDir('nproc');
    if (asRoot) await chown(dataDir, NOBODY, NOBODY);
    // The server's user already runs more processes on the host than one command may have.
    for (let i = 0; i < 100; i++) hostProcesses.push(spawn('sleep', ['300'], { ...unprivileged, stdio: 'ignore' }));
    const script = path.join(import.meta.dirname, 'scripts', 'nproc-sessions.ts');
    const child = spawn(process.execPath, [script, dataDir, '64'], {
      ...unprivileged,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(0);
    const report = JSON.parse(stdout) as {
      enforcement: string;
      uid: number;
      bomb: { exitCode: number | null; limit?: { kind: string; message: string } };
      work: { exitCode: number | null; stdout: string; stderr: string };
    };
    expect(report.enforcement).toBe('rlimit');
    expect(report.uid).not.toBe(0);
    expect(report.work, report.work.stderr).toMatchObject({ exitCode: 0, stdout: 'done\n' });
    expect(report.bomb.limit).toEqual({
      kind: 'processes',
      message: expect.stringContaining('limit of 64 processes and threads'),
    });
  });
});
