import { defineConfig } from 'vitest/config';
import { testTiers } from './test/tiers.ts';

const root = import.meta.dirname;
const tiers = testTiers(root);

/**
 * Three tiers (see test/tiers.ts). The unit tier runs first, so a broken build fails in the first
 * minutes: `npm run test:unit` is the inner loop, `npm test` runs every tier and stops after the
 * unit tier when it failed. Integration and e2e files spend most of their time waiting on
 * processes, servers and PostgreSQL (two files at a time left a third of two cores idle), so three
 * files run at once on two cores; they share one group (the same `groupOrder`, three files at a time
 * in all), so a long file at the end of one tier does not leave a worker idle until the other tier
 * may start.
 */
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 90_000,
    pool: 'forks',
    globalSetup: ['test/global-setup.ts'],
    // The security suite's count of probes tried and held, after the usual output; and a unit tier
    // that failed cancels the tiers after it (test/unit-first-reporter.ts).
    reporters: ['default', './test/security/probe-reporter.ts', './test/unit-first-reporter.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: tiers.unit, sequence: { groupOrder: 0 }, maxWorkers: 4 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: tiers.integration,
          sequence: { groupOrder: 1 },
          maxWorkers: 3,
        },
      },
      {
        extends: true,
        test: { name: 'e2e', include: tiers.e2e, sequence: { groupOrder: 1 }, maxWorkers: 3 },
      },
    ],
  },
});
