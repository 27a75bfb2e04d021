import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { alive, findStalePostmaster, ownerFile } from '../../db/stale-postmaster.ts';
import { waitFor } from '../helpers/wait-for.ts';

/**
 * Which PostgreSQL left in a data directory may be taken over: one whose starter died may; one that
 * a live Patchbay took over (an orphan adopted before) may not, though it is no process's child
 * that the owner file names. A stand-in "postgres" (a sleep named for the directory, orphaned by a
 * double fork) plays the server, so no database is started.
 */
describe('an embedded PostgreSQL left running', () => {
  const pids: number[] = [];
  let dir = '';
  afterEach(async () => {
    for (const pid of pids.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** An orphaned process whose command line says `postgres -D <databaseDir>`, and its postmaster.pid. */
  async function orphanServer(databaseDir: string): Promise<number> {
    const out = spawnSync(
      'bash',
      ['-c', `(exec -a "postgres -D ${databaseDir}" sleep 120 </dev/null >/dev/null 2>&1 & echo $!)`],
      {
        encoding: 'utf8',
      },
    );
    const pid = Number(out.stdout.trim());
    pids.push(pid);
    await writeFile(join(databaseDir, 'postmaster.pid'), `${pid}\n${databaseDir}\n0\n5999\n/tmp\n*\n0\nready\n`);
    return pid;
  }

  it('is taken over when the process that started or adopted it is gone', async () => {
    dir = await mkdtemp(join(tmpdir(), 'patchbay-stale-'));
    const pid = await orphanServer(dir);
    await writeFile(ownerFile(dir), '999999\n');
    expect(await findStalePostmaster(dir)).toMatchObject({ pid, port: 5999, ready: true });
  });

  it('is refused while the Patchbay that adopted it still runs', async () => {
    dir = await mkdtemp(join(tmpdir(), 'patchbay-stale-'));
    await orphanServer(dir);
    const adopter = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 120_000)'], { stdio: 'ignore' });
    pids.push(adopter.pid!);
    await waitFor(async () => alive(adopter.pid!), 'the adopter');
    await writeFile(ownerFile(dir), `${adopter.pid}\n`);
    await expect(findStalePostmaster(dir)).rejects.toThrow(`another Patchbay (pid ${adopter.pid}`);
  });
});
