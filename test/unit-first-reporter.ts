import type { Reporter, TestModule, TestSpecification, Vitest } from 'vitest/node';

/**
 * Fails fast on the unit tier: when every unit file of the run has ended and one of them failed,
 * the run is cancelled, so the integration and e2e tiers (which start only after the unit tier, see
 * `sequence.groupOrder` in vitest.config.ts) do not run for many minutes on a build that is already
 * broken. That is what lets CI run `npm test` alone, instead of `npm run test:unit` and then the
 * unit tier again inside `npm test`. Every unit failure is still reported: the cancel waits for the
 * whole tier.
 */
export default class UnitFirstReporter implements Reporter {
  #vitest: Vitest | undefined;
  #unitLeft = 0;
  #unitFailed = false;

  onInit(vitest: Vitest): void {
    this.#vitest = vitest;
  }

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    this.#unitLeft = specifications.filter((spec) => spec.project.name === 'unit').length;
    this.#unitFailed = false;
  }

  onTestModuleEnd(module: TestModule): void {
    if (module.project.name !== 'unit') return;
    this.#unitLeft -= 1;
    if (!module.ok()) this.#unitFailed = true;
    if (this.#unitLeft > 0 || !this.#unitFailed) return;
    process.stdout.write('\nunit tier failed: the integration and e2e tiers are not run\n');
    // Not awaited: the cancel waits for the run, which waits for this reporter.
    void this.#vitest?.cancelCurrentRun('test-failure');
  }
}
