import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs every bench script in this folder, one after another, each in its own process.
const here = dirname(fileURLToPath(import.meta.url));
const scripts = readdirSync(here)
  .filter((name) => name.endsWith('.ts') && name !== 'run-all.ts' && !name.startsWith('_'))
  .sort();
let failed = 0;
for (const script of scripts) {
  process.stdout.write(`\n=== ${script} ===\n`);
  // The crash trials restart a real server dozens of times: they get an hour.
  const timeout = (script === 'crash-trials.ts' ? 60 : 10) * 60_000;
  const result = spawnSync(process.execPath, [join(here, script)], { stdio: 'inherit', timeout });
  if (result.status !== 0) failed += 1;
}
process.exitCode = failed ? 1 : 0;
