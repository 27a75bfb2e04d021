import { access } from 'node:fs/promises';
import { status as grpcStatus } from '@grpc/grpc-js';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../../src/core/actor.ts';
import type { EventOf, StoredEvent } from '../../../src/core/events.ts';
import { checksSandboxId } from '../../../src/core/checks-sandbox.ts';
import type { ModelProvider } from '../../../src/models/model-provider.ts';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import {
  sessionSandboxes,
  startModalBackend,
  startWebSession,
  type ModalBackend,
} from '../../helpers/modal-patchbay.ts';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * SANDBOX=modal: the checks run in a Modal sandbox of their own (`<session>-checks`), on a checkout
 * of the judged commit, never in the agent's sandbox (issue 35). The real `modal` SDK against the
 * loopback fake Modal, the whole Patchbay on a test database.
 */
describe('the checks sandbox on Modal', () => {
  let remote: RemoteFixture;
  let modal: ModalBackend;
  let app: PatchbayFixture | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    await remote.pushCommit('test.js', "require('node:assert').strictEqual(require('./add.js')(2, 3), 5);\n", 'test');
    await remote.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
    modal = await startModalBackend();
  });
  afterAll(async () => {
    await app?.dispose();
    await modal?.close();
    await remote?.cleanup();
  });

  it("runs the checks on a checkout of the commit in a sandbox of their own, without the agent's uncommitted files", async () => {
    const model = createScriptedProvider({
      scenario: [
        {
          toolCalls: [
            { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => a + b;\n' } },
          ],
        },
        {
          toolCalls: [
            {
              name: 'run_shell',
              input: {
                command:
                  'echo agent > .git/agent-note && echo scratch > scratch.txt && echo /scratch.txt >> .git/info/exclude',
              },
            },
          ],
        },
        { text: 'Fixed add.' },
      ],
    });
    app = await modal.startPatchbay({ model });
    const id = await startWebSession(app, { text: 'Fix add so 2 + 3 is 5', repo: remote.remote, actor: alice });
    const done = await settled(app, id);
    expect(done.status, done.error ?? '').toBe('completed');

    const checks = of(await app.store.events(done.id), 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => [c.command, c.outcome, c.commit])).toEqual([['npm test', 'passed', done.result?.commit]]);
    expect(await git(remote.remote, 'show', `${done.result!.commit}:add.js`)).toBe('module.exports = (a, b) => a + b;');

    const tagged = (id: string) => sessionSandboxes(modal.fake, id);
    const [agent] = tagged(done.id);
    const [checker] = tagged(checksSandboxId(done.id));
    expect(agent && checker && agent.sandboxId !== checker.sandboxId).toBe(true);
    // The check ran in the checks' sandbox, in its checkout; the agent's sandbox ran no check.
    const ran = (sb: typeof agent) => [...sb!.execs.values()].map((e) => e.args.join(' '));
    expect(ran(checker).some((a) => a.includes('cd checkout && exec sh -c'))).toBe(true);
    expect(ran(agent).some((a) => a.includes('cd checkout && exec sh -c'))).toBe(false);
    // Nothing the agent left outside its commit is in the checks' sandbox.
    expect(await exists(join(agent!.fsDir, 'workspace', '.git', 'agent-note'))).toBe(true);
    expect(await exists(join(checker!.fsDir, 'workspace', 'scratch.txt'))).toBe(false);
    expect(await exists(join(checker!.fsDir, 'workspace', '.git'))).toBe(false);
    expect(modal.fake.refusals).toEqual([]);

    // Idle past the workspace TTL, the checks' sandbox is found by its record and ended.
    // Both are recorded under the session, told apart by role (migration 027).
    const db = app.database.db;
    const rows = await db
      .selectFrom('modal_sandboxes')
      .select(['role', 'sandbox_id'])
      .where('session_id', '=', done.id)
      .orderBy('role')
      .execute();
    expect(rows).toEqual([
      { role: 'agent', sandbox_id: agent!.sandboxId },
      { role: 'checks', sandbox_id: checker!.sandboxId },
    ]);
    // A worker that died during the checks leaves their sandbox's record unreleased: still reaped once idle.
    await db
      .updateTable('modal_sandboxes')
      .set({ released: false })
      .where('session_id', '=', done.id)
      .where('role', '=', 'checks')
      .execute();
    const removed = await app.sandboxes!.reap(new Date(Date.now() + 2 * 24 * 60 * 60_000));
    expect(removed).toContain(checksSandboxId(done.id));
    expect(checker!.result).toBeDefined();
  }, 180_000);

  it('fails the gate closed, with the reason in the thread, when the checks sandbox cannot be started', async () => {
    await app?.dispose();
    const scripted = createScriptedProvider({
      scenario: [
        {
          toolCalls: [
            { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => a + b;\n' } },
          ],
        },
        { text: 'Fixed add.' },
      ],
    });
    // As the agent finishes, Modal refuses the next sandbox: the checks' own.
    const model: ModelProvider = {
      ...scripted,
      runTurn: (request) => {
        if (scripted.requests.length === 1) modal.fake.failNextCreate(grpcStatus.RESOURCE_EXHAUSTED, QUOTA);
        return scripted.runTurn(request);
      },
    };
    app = await modal.startPatchbay({ model });
    const id = await startWebSession(app, { text: 'Fix add so 2 + 3 is 5', repo: remote.remote, actor: alice });
    const done = await settled(app, id);
    const events = await app.store.events(done.id);
    const checks = of(events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => [c.command, c.outcome])).toEqual([['npm test', 'not-run']]);
    expect(checks[0]!.reason).toContain("the checks' sandbox could not be started");
    expect(checks[0]!.reason).toContain(QUOTA);
    // Not ready, and the thread's closing line says why (the session does not wait on a sandbox that never comes).
    const [gate] = of(events, 'review-gate');
    expect(gate?.ready).toBe(false);
    expect(gate?.reasons.join('\n')).toContain("the checks' sandbox could not be started");
    expect(done.status).toBe('completed');
    const closing = of(events, 'status-changed').at(-1);
    expect(closing?.reason).toContain("`npm test` could not run: the checks' sandbox could not be started");
    expect(modal.fake.refusals).toEqual([]);
  }, 180_000);
});

const QUOTA = 'Your workspace has reached its limit of running sandboxes';

/** The session once it is no longer queued or running (a stuck one fails the test with Modal's calls). */
async function settled(app: PatchbayFixture, id: string) {
  return waitForStatus(app, id, ['completed', 'failed', 'waiting'], 120_000);
}
