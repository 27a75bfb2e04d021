// Run by sandbox-user-startup.test.ts, possibly without CAP_SYS_ADMIN: starts a local provider on a
// fresh data dir and prints what happened as JSON.
import pino from 'pino';
import { createLocalSandboxProvider } from '../../../sandbox/index.ts';

const dataDir = process.argv[2]!;
try {
  const provider = await createLocalSandboxProvider({
    dataDir,
    log: pino({ level: 'silent' }),
    ttlMinutes: 60,
    mode: 'bwrap',
    bwrapPath: '/usr/bin/bwrap',
  });
  process.stdout.write(JSON.stringify({ started: true, sandboxUid: provider.sandboxUser?.uid ?? null }));
  await provider.close();
} catch (error) {
  process.stdout.write(
    JSON.stringify({ started: false, code: (error as { code?: string }).code, message: (error as Error).message }),
  );
}
