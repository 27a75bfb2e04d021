import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/index.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { commitAll } from '../../src/git/commit-all.ts';
import { type EvidenceRepo, takeEvidence } from '../../src/git/evidence-repo.ts';
import { openCommitCheckout, type SetupDigests } from '../../src/harness/checks/commit-checkout.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { createProvider, type SessionFixture, startSession } from '../git/sandbox-fixture.ts';

const signal = () => AbortSignal.timeout(60_000);

/**
 * The checks' own sandbox between rounds (issue 35): its workspace is emptied each round, and a
 * setup cache comes back only as setup made it. A check runs the agent's code, which may write
 * anywhere in that workspace (next to its checkout too): nothing it leaves there may reach the
 * next round's checks, where a test could read it and pass on state a clean clone does not have.
 */
describe("the checks' workspace between rounds (real bubblewrap sandboxes, real git)", () => {
  let remote: RemoteFixture;
  let provider: LocalSandboxProvider;
  let agent: SessionFixture;
  let checks: Sandbox;
  let evidence: EvidenceRepo;
  let dataDir: string;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('NOTES.md', 'notes\n', 'Notes');
    dataDir = join(remote.root, 'data');
    provider = await createProvider(dataDir);
    agent = await startSession(provider, remote, dataDir, 's1');
    await agent.sandbox.writeFile('add.js', 'module.exports = (a, b) => a + b;\n');
    const { commit } = await commitAll(agent.sandbox, {
      message: 'add',
      author: { name: 'Ada', email: 'ada@example.com' },
      signal: signal(),
    });
    evidence = await takeEvidence({
      sandbox: agent.sandbox,
      workspaceDir: agent.workspaceDir,
      dataDir,
      repo: remote.remote,
      commit: commit!,
      baseCommit: agent.prepared.baseCommit,
      signal: signal(),
    });
    checks = await provider.acquire('s1-checks', { network: 'none' });
  }, 120_000);
  afterAll(async () => {
    await evidence?.close();
    await checks?.destroy();
    await agent?.sandbox.destroy();
    await remote?.cleanup();
  });

  /** One round: a checkout of the judged commit; `key` names the setup cache it may reuse. */
  const round = (digests: SetupDigests, key?: string) =>
    openCommitCheckout({ sandbox: checks, evidence, digests, signal: signal(), ...(key && { key }) });
  const run = async (checkout: Awaited<ReturnType<typeof round>>, command: string) =>
    (await checkout.exec(command, { timeoutMs: 30_000, signal: signal() })).stdout.trim();

  it('keeps nothing a check wrote beside its checkout when the repository has no setup (setup/-)', async () => {
    const digests: SetupDigests = new Map();
    const first = await round(digests);
    await run(first, 'mkdir -p ../setup/- ../setup/other && echo carried | tee ../setup/-/state ../setup/other/state');
    await first.close();

    const second = await round(digests);
    expect(await run(second, 'cat ../setup/-/state ../setup/other/state 2>/dev/null || echo absent')).toBe('absent');
    expect(await run(second, 'find .. -mindepth 1 -maxdepth 2 ! -path "../checkout*"')).toBe('../setup');
    await second.close();
  });

  it("gives back a setup cache as setup made it, without what a check added to the cache's folder", async () => {
    const digests: SetupDigests = new Map();
    const first = await round(digests, 'k1');
    expect(await first.restoreSetup('k1')).toBe(false);
    await run(first, 'mkdir -p node_modules/dep && echo "module.exports = 1;" > node_modules/dep/index.js');
    await first.noteSetupOutput('k1');
    // The round's check, after setup: it writes into the cache's folder beside its checkout.
    await run(first, 'echo carried > ../setup/k1/state');
    await first.close();

    const second = await round(digests, 'k1');
    expect(await second.restoreSetup('k1')).toBe(true);
    expect(await run(second, 'cat node_modules/dep/index.js')).toBe('module.exports = 1;');
    expect(await run(second, 'cat ../setup/k1/state 2>/dev/null || echo absent')).toBe('absent');
    await second.close();
  });
});
