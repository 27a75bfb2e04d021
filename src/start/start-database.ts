import type { Logger } from 'pino';
import { openDatabase, type DatabaseHandle } from '../../db/database.ts';
import type { Config } from '../config.ts';
import { databaseEndpoint, type EgressWiring } from './egress-wiring.ts';
import type { RestartRecovery } from './restart-recovery.ts';
import type { Shutdown } from './shutdown.ts';

/**
 * DATABASE_URL, or the embedded database under DATA_DIR. Its restarts go to the restart recovery;
 * it stops reconnecting as soon as the process closes, and sandboxes may not reach it.
 */
export async function startDatabase(
  config: Config,
  deps: { restarts: RestartRecovery; egress: EgressWiring; log: Logger; shutdown: Shutdown },
): Promise<DatabaseHandle> {
  const database = await openDatabase({
    ...(config.databaseUrl && { url: config.databaseUrl }),
    dataDir: config.dataDir,
    log: deps.log,
    onRestarted: deps.restarts.restarted,
  });
  deps.shutdown.add(() => database.close());
  deps.shutdown.begin(() => database.beginClose());
  deps.egress.protect(databaseEndpoint(database.url));
  return database;
}
