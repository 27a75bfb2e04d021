import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'test/**/*.test.ts',
      'src/**/*.test.ts',
      'integrations/**/*.test.ts',
      'sandbox/**/*.test.ts',
      'db/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    globalSetup: ['test/global-setup.ts'],
    // The security suite's count of probes tried and held, after the usual output.
    reporters: ['default', './test/security/probe-reporter.ts'],
  },
});
