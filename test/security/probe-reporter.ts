import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/** Every test file in this folder is part of the security suite, whoever added it. */
const SUITE_DIR = path.resolve(import.meta.dirname);

/**
 * Prints "security probes: N tried, M held" at the end of any vitest run that ran files of
 * test/security/ (`npm test` and `npm run test:security` alike). A probe is one test case: it
 * tried an attack the security review tried, and held when the test passed. Skipped cases count
 * as tried and not held, so a probe that cannot run is never reported as holding.
 */
export default class SecurityProbeReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let tried = 0;
    let held = 0;
    const broke: string[] = [];
    for (const module of testModules) {
      if (!module.moduleId.startsWith(`${SUITE_DIR}${path.sep}`)) continue;
      for (const test of module.children.allTests()) {
        tried += 1;
        if (test.result().state === 'passed') held += 1;
        else broke.push(`${path.relative(SUITE_DIR, module.moduleId)} > ${test.fullName}`);
      }
    }
    if (tried === 0) return;
    const lines = [`security probes: ${tried} tried, ${held} held`, ...broke.map((name) => `  did not hold: ${name}`)];
    process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
