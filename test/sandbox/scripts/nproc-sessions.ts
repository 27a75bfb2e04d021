// Run by sandbox-nproc-userns.test.ts as an unprivileged uid: two sessions on rlimits alone, one
// fork-bombing, one doing ordinary work; prints their results as JSON.
import pino from 'pino';
import { createLocalSandboxProvider } from '../../../sandbox/index.ts';
import { DEFAULT_SANDBOX_LIMITS } from '../../../sandbox/sandbox-limits.ts';

const [dataDir, maxProcs] = [process.argv[2]!, Number(process.argv[3])];
const provider = await createLocalSandboxProvider({
  dataDir,
  log: pino({ level: 'silent' }),
  ttlMinutes: 60,
  mode: 'bwrap',
  bwrapPath: '/usr/bin/bwrap',
  limitMode: 'rlimit',
  limits: { ...DEFAULT_SANDBOX_LIMITS, maxProcs },
});
const bomber = await provider.acquire('bomber', { network: 'none' });
const worker = await provider.acquire('worker', { network: 'none' });
const [bomb, work] = await Promise.all([
  bomber.exec('python3 -c "import os\nwhile True:\n  try: os.fork()\n  except OSError: pass"', { timeoutMs: 120_000 }),
  worker.exec('for i in $(seq 20); do sh -c "sleep 1" & done; wait; echo done', { timeoutMs: 120_000 }),
]);
console.log(JSON.stringify({ enforcement: provider.enforcement, uid: process.getuid?.(), bomb, work }));
await bomber.destroy();
await worker.destroy();
