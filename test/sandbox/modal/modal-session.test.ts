import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../../helpers/wait-for.ts';
import { COVERED, startFakeModal, Status, type FakeModal } from '../../fakes/modal/fake-modal.ts';
import {
  modalSandboxRecord,
  releasedModalSandbox,
  sessionSandboxes,
  startModalBackend,
  startWebSession,
  type ModalBackend,
} from '../../helpers/modal-patchbay.ts';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import { changelogModel, changelogRequester, expectChangelogPushed } from '../../harness/changelog-scenario.ts';

/**
 * SANDBOX=modal end to end: the real `modal` SDK (0.11.1) against the loopback fake Modal
 * (test/fakes/modal), reached through MODAL_SERVER_URL with the token pair in the environment, and
 * the whole Patchbay (queue, worker, harness, runner, host mirror and push) on a test database.
 *
 * What the fake covers, exactly (COVERED in fake-modal.ts; anything else is refused and fails the test):
 * - control plane `modal.client.ModalClient`: AuthTokenGet, EnvironmentGetOrCreate, AppGetOrCreate,
 *   ImageGetOrCreate, ImageJoinStreaming, ImageFromId, SandboxCreateV2, SandboxGetTaskIdV2,
 *   SandboxGetCommandRouterAccess, SandboxWaitV2, SandboxTerminateV2, SandboxListV2, SandboxTagsGetV2,
 *   SandboxGetExitSnapshotV2;
 * - command router `modal.task_command_router.TaskCommandRouter`: TaskExecStart, TaskExecStdioRead,
 *   TaskExecStdinWrite, TaskExecWait, TaskExecPoll, TaskSnapshotFilesystem.
 * Commands run for real in bubblewrap over a per-sandbox directory tree (/workspace, /tmp, /root);
 * a filesystem snapshot is a copy of that tree, and an image made from it starts a sandbox with it;
 * a sandbox created with exit snapshots gets one when it ends, unless the test says it was lost.
 */
describe('Modal sandboxes through the real SDK and a loopback Modal', () => {
  let remote: RemoteFixture;
  let fake: FakeModal;
  let app: PatchbayFixture | undefined;
  let modal: ModalBackend;

  beforeAll(async () => {
    remote = await createRemote();
    modal = await startModalBackend();
    fake = modal.fake;
  });
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });
  afterAll(async () => {
    await modal.close();
    await remote.cleanup();
  });

  it('covers exactly the calls listed above', () => {
    expect(COVERED.controlPlane).toHaveLength(14);
    expect(COVERED.router).toHaveLength(6);
  });

  it('runs the same tool-loop scenario as the local sandbox: writes, checks, commits and pushes, with no token in the sandbox', async () => {
    const model = changelogModel();
    app = await modal.startPatchbay({ model });
    const id = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    const session = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    await expectChangelogPushed(app, remote, session, model);

    const sandboxes = sessionSandboxes(fake, session.id);
    expect(sandboxes).toHaveLength(1);
    const [sandbox] = sandboxes;
    // Network blocked (SANDBOX_EGRESS_ALLOW=none leaves no domain to allow).
    expect(sandbox!.definition).toMatchObject({
      networkAccess: { networkAccessType: 2, allowedDomains: [], allowedCidrs: [] },
      timeoutSecs: 120 * 60,
      idleTimeoutSecs: 15 * 60,
    });
    // Every command ran in the workspace (or a directory under it), or at / for the image probe.
    expect(
      [...sandbox!.execs.values()].filter((e) =>
        e.args.includes(
          'mkdir -p /workspace && for tool in git setsid; do command -v "$tool" >/dev/null 2>&1 || { echo "$tool"; exit 3; }; done',
        ),
      ),
    ).toHaveLength(1);
    // The work happened in the Modal sandbox's own filesystem, which never held a credential.
    expect(await readFile(join(sandbox!.fsDir, 'workspace', 'CHANGELOG.md'), 'utf8')).toBe('# Changes\n\n- first\n');
    expect(await readFile(join(sandbox!.fsDir, 'workspace', '.git', 'config'), 'utf8')).toContain(
      'url = https://patchbay.invalid/',
    );
    // Let go with a snapshot, which the session's record points at.
    expect(fake.calls).toContain('TaskSnapshotFilesystem');
    // The run lets go of the sandbox (with a snapshot) just after the session's status is written.
    const record = await releasedModalSandbox(app!, session.id);
    expect(record).toMatchObject({ sandbox_id: sandbox!.sandboxId, released: true });
    expect(fake.images.get(record.image_id!)).toMatchObject({ kind: 'snapshot', fromSandbox: sandbox!.sandboxId });
    expect(fake.refusals).toEqual([]);
  });

  it('keeps the git token on the host: it is used for the mirror and the push, and never reaches the sandbox', async () => {
    const token = `ghs_${randomBytes(12).toString('hex')}`;
    let asked = 0;
    const credentials = {
      name: 'test-credentials',
      async gitEnv() {
        asked++;
        return {
          GIT_CONFIG_COUNT: '1',
          GIT_CONFIG_KEY_0: 'http.extraHeader',
          GIT_CONFIG_VALUE_0: `Authorization: Bearer ${token}`,
        };
      },
    };
    const model = changelogModel();
    app = await modal.startPatchbay({
      model,
      integrations: async () => [
        { replier: { source: 'slack', reply: async () => ({ state: null }) }, gitCredentials: credentials },
      ],
    });
    const id = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    const session = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    await expectChangelogPushed(app, remote, session, model);
    expect(asked).toBeGreaterThanOrEqual(2); // the workspace's mirror refresh and the push
    const sandbox = sessionSandboxes(fake, session.id)[0]!;
    const sent = [...sandbox.execs.values()].map((exec) => JSON.stringify([exec.args, exec.env]));
    expect(sent.length).toBeGreaterThan(5);
    expect(sent.filter((line) => line.includes(token))).toEqual([]);
    const files = await readdir(sandbox.fsDir, { recursive: true, withFileTypes: true });
    for (const file of files.filter((f) => f.isFile())) {
      expect(
        await readFile(join(file.parentPath, file.name), 'latin1'),
        join(file.parentPath, file.name),
      ).not.toContain(token);
    }
  });

  it('continues from the snapshot when a follow-up comes after the sandbox is gone: no work is lost', async () => {
    // The agent drafts a file, then asks; while the session waits, Modal ends its sandbox (time limit).
    const model = createScriptedProvider({
      scenario: (messages) => {
        const turn = messages.filter((m) => m.role === 'assistant').length;
        if (turn === 0)
          return {
            toolCalls: [
              { name: 'write_file', input: { path: 'NOTES.md', content: 'draft\n' } },
              { name: 'ask_user', input: { question: 'Which title?', choices: ['Notes', 'Draft'] } },
            ],
          };
        if (turn === 1) return { toolCalls: [{ name: 'run_shell', input: { command: 'cat NOTES.md' } }] };
        return { text: 'Kept the draft as Notes.' };
      },
    });
    app = await modal.startPatchbay({ model });
    const id = await startWebSession(app, { text: 'Write some notes', repo: remote.remote });
    const waiting = await waitForStatus(app, id, ['waiting', 'failed', 'completed'], 60_000);
    expect(waiting.status).toBe('waiting');
    const first = await releasedModalSandbox(app!, id, 'the first sandbox to be released');
    fake.kill(first.sandbox_id!, { status: Status.TIMEOUT, exception: 'Sandbox timed out' });

    await app.service.sendMessage(id, changelogRequester, 'Notes', waiting.pendingQuestion!.questionId);
    const done = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    expect(done.status, done.error ?? '').toBe('completed');

    const ours = sessionSandboxes(fake, id);
    expect(ours.map((sb) => sb.sandboxId)).toEqual([first.sandbox_id, expect.any(String)]);
    // The draft written before the question was still there, because the second sandbox started
    // from a snapshot of the first (its exit snapshot, newer than the one taken at release).
    const shell = model.requests.at(-1)!.messages.find((m) => m.role === 'tool' && m.name === 'run_shell');
    expect(shell?.role === 'tool' && shell.content).toContain('draft');
    expect(await git(remote.remote, 'show', `${done.result!.commit}:NOTES.md`)).toBe('draft');
    expect(fake.images.get(ours[1]!.imageId)).toMatchObject({ kind: 'snapshot', fromSandbox: first.sandbox_id });
    // A clean hand-over: nothing to warn the agent about.
    expect((await app.store.events(id, { types: ['run-resumed'] })).length).toBe(0);
    expect(fake.refusals).toEqual([]);
  });

  it('ends the run with a clear reason when the sandbox and its worker die mid-command, and a message resumes it from the last snapshot', {
    timeout: 90_000,
  }, async () => {
    const model = createScriptedProvider({
      scenario: (messages) => {
        const turn = messages.filter((m) => m.role === 'assistant').length;
        if (turn === 0) return { toolCalls: [{ name: 'write_file', input: { path: 'ALPHA.md', content: 'alpha\n' } }] };
        if (turn === 1)
          return { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 30', timeout_seconds: 120 } }] };
        if (turn === 2) return { toolCalls: [{ name: 'run_shell', input: { command: 'cat ALPHA.md' } }] };
        return { text: 'ALPHA.md is in place.' };
      },
    });
    // Snapshot after every step, so the death costs nothing done before the command.
    app = await modal.startPatchbay({ model, env: { MODAL_SNAPSHOT_EVERY_MINUTES: '0' } });
    const id = await startWebSession(app, { text: 'Add alpha', repo: remote.remote });
    await waitFor(
      async () => (await app!.store.events(id, { types: ['tool-start'] })).length >= 2,
      'the sleep to start',
    );
    const sandbox = sessionSandboxes(fake, id)[0]!;
    await waitFor(
      async () => [...sandbox.execs.values()].some((exec) => exec.args.includes('sleep 30') && !exec.exit),
      'the sleep to run in the sandbox',
    );
    // The worker is lost with it: Modal has no exit snapshot to offer.
    fake.kill(sandbox.sandboxId, {}, { exitSnapshot: false });

    const failed = await waitForStatus(app, id, ['failed', 'completed'], 30_000);
    expect(failed.status).toBe('failed');
    const reason =
      /^The Modal sandbox sb-\S+ ended while this session was working in it: its container exited with code 1\. Send a message to resume: the session continues in a new sandbox from the sandbox's last snapshot\.$/;
    expect(failed.error).toMatch(reason);
    const errors = (await app.store.events(id, { types: ['error'] })).map((e) => e.event);
    expect(errors).toEqual([{ type: 'error', code: 'sandbox_failed', message: expect.stringMatching(reason) }]);

    await app.service.sendMessage(id, changelogRequester, 'Please go on');
    const done = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    expect(done.status, done.error ?? '').toBe('completed');
    // The agent was told its sandbox was lost, and the file it wrote before the death was restored.
    const resumed = model.requests[2]!.messages;
    expect(
      resumed.some(
        (m) =>
          m.role === 'user' &&
          /^Patchbay: The sandbox this session worked in was lost before its work was saved\. The workspace was restored from a snapshot taken at /.test(
            m.content,
          ),
      ),
    ).toBe(true);
    const shell = model.requests
      .at(-1)!
      .messages.filter((m) => m.role === 'tool' && m.name === 'run_shell')
      .at(-1);
    expect(shell?.role === 'tool' && shell.content).toContain('alpha');
    expect(await git(remote.remote, 'show', `${done.result!.commit}:ALPHA.md`)).toBe('alpha');
    expect((await app.store.events(id, { types: ['run-resumed'] })).map((e) => e.event)).toEqual([
      { type: 'run-resumed', reason: expect.stringContaining('was lost before its work was saved') },
    ]);
    expect(fake.refusals).toEqual([]);
  });

  it('ends a run with a clear reason for a quota error and for bad credentials, and resumes after a quota error with a message', {
    timeout: 90_000,
  }, async () => {
    fake.failNextCreate(grpcStatus.RESOURCE_EXHAUSTED, 'Your workspace has reached its limit of running sandboxes');
    const model = changelogModel();
    app = await modal.startPatchbay({ model });
    const id = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    const failed = await waitForStatus(app, id, ['failed', 'completed'], 60_000);
    expect(failed.error).toBe(
      "Modal has no capacity or quota left while creating a sandbox (Your workspace has reached its limit of running sandboxes); try again later or raise the workspace's limits",
    );
    await app.service.sendMessage(id, changelogRequester, 'Try again');
    const done = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    expect(done.status, done.error ?? '').toBe('completed');
    await app.dispose();
    app = undefined;

    app = await modal.startPatchbay({ model: changelogModel(), env: { MODAL_TOKEN_SECRET: 'as-not-the-secret' } });
    const deniedId = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    const refused = await waitForStatus(app, deniedId, ['failed', 'completed'], 60_000);
    expect(refused.error).toMatch(
      /^Modal refused the credentials while (opening the Modal app patchbay-test|creating a sandbox) \(.*Token ID or secret is invalid.*\): check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET$/,
    );
    // The fake refused exactly that (and nothing else, in this whole file).
    expect(fake.refusals.length).toBeGreaterThan(0);
    expect(fake.refusals.filter((r) => !r.startsWith('AuthTokenGet: Token ID or secret is invalid'))).toEqual([]);
    fake.refusals.length = 0;
  });

  it('ends the run saying what a custom MODAL_IMAGE lacks', async () => {
    app = await modal.startPatchbay({ model: changelogModel(), env: { MODAL_IMAGE: 'scratch' } });
    const id = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    const failed = await waitForStatus(app, id, ['failed', 'completed'], 60_000);
    expect(failed.error).toMatch(
      /^The Modal image scratch cannot run Patchbay's commands \(sh -c failed with exit \d+: .*sh.*\): MODAL_IMAGE needs sh, git, coreutils and setsid$/,
    );
    const sandbox = sessionSandboxes(fake, id)[0]!;
    expect(sandbox.result).toMatchObject({ status: Status.TERMINATED });
    expect(fake.refusals).toEqual([]);
  });

  it('ends the run with a clear reason when the image fails to build', async () => {
    const broken = await startFakeModal({ imageBuildFailure: 'E: Unable to locate package ripgrep' });
    process.env.MODAL_SERVER_URL = broken.url;
    try {
      app = await modal.startPatchbay({
        model: changelogModel(),
        env: { MODAL_TOKEN_ID: broken.tokenId, MODAL_TOKEN_SECRET: broken.tokenSecret },
      });
      const id = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
      const failed = await waitForStatus(app, id, ['failed', 'completed'], 60_000);
      expect(failed.error).toMatch(
        /^The Modal image failed to build while creating a sandbox \(Image build for im-\w+ failed with the exception:\s+E: Unable to locate package ripgrep\): check MODAL_IMAGE$/,
      );
      expect(broken.refusals).toEqual([]);
    } finally {
      await app?.dispose();
      app = undefined;
      process.env.MODAL_SERVER_URL = fake.url;
      await broken.close();
    }
  });

  it('execs with exit codes, time limits, aborts, output caps and stdin, confines files to the workspace, and reaps orphans by tag', {
    timeout: 90_000,
  }, async () => {
    app = await modal.startPatchbay({
      model: changelogModel(),
      env: { SANDBOX_EGRESS_ALLOW: 'registry.npmjs.org,*.pythonhosted.org,10.0.0.1:8080' },
    });
    const id = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    expect((await waitForStatus(app, id, ['completed', 'failed'], 60_000)).status).toBe('completed');
    const first = sessionSandboxes(fake, id)[0]!;
    // The egress allowlist's domains (not its addresses) became Modal's domain allowlist, with no CIDRs.
    expect(first.definition).toMatchObject({
      networkAccess: {
        networkAccessType: 3,
        allowedDomains: ['registry.npmjs.org', '*.pythonhosted.org'],
        allowedCidrs: [],
      },
    });
    await releasedModalSandbox(app, id, 'the release');

    // A follow-up reattaches to the live sandbox by its stored id.
    const sandboxes = app.sandboxes!;
    const sandbox = await sandboxes.acquire(id, { network: 'proxy' });
    expect(sessionSandboxes(fake, id)).toHaveLength(1);
    try {
      expect(await sandbox.readFile('CHANGELOG.md')).toBe('# Changes\n\n- first\n');
      const plain = await sandbox.exec('echo out; echo err >&2; exit 3');
      expect(plain).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false, aborted: false });
      expect((await sandbox.exec('cat', { stdin: 'from stdin' })).stdout).toBe('from stdin');
      expect((await sandbox.exec('echo "$GREETING"', { env: { GREETING: 'hi' } })).stdout).toBe('hi\n');

      const timed = await sandbox.exec('echo started; sleep 30', { timeoutMs: 1_500 });
      expect(timed).toMatchObject({ exitCode: null, timedOut: true, aborted: false, stdout: 'started\n' });
      expect(timed.durationMs).toBeLessThan(15_000);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 1_000);
      const aborted = await sandbox.exec('sleep 30', { signal: controller.signal });
      expect(aborted).toMatchObject({ exitCode: null, timedOut: false, aborted: true });
      // Both sleeps were killed inside the sandbox, not left running.
      await waitFor(
        async () =>
          [...fake.sandboxes.get(first.sandboxId)!.execs.values()]
            .filter((e) => e.args.some((a) => a.includes('sleep 30')))
            .every((e) => e.exit),
        'the sleeps to be killed',
        10_000,
      );

      const capped = await sandbox.exec('head -c 300000 /dev/zero | tr "\\0" a', { maxOutputBytes: 1000 });
      expect(capped.stdout).toBe('a'.repeat(1000));
      expect(capped.truncatedBytes).toEqual({ stdout: 299_000, stderr: 0 });

      await sandbox.writeFile('notes/deep/a.txt', 'A');
      expect((await sandbox.exec('pwd', { cwd: 'notes/deep' })).stdout).toBe('/workspace/notes/deep\n');
      expect(await sandbox.listFiles('notes', { recursive: true })).toEqual([
        { path: 'notes/deep', type: 'dir', size: expect.any(Number) },
        { path: 'notes/deep/a.txt', type: 'file', size: 1 },
      ]);
      await sandbox.exec('ln -s /etc/hostname leak');
      await expect(sandbox.readFile('leak')).rejects.toMatchObject({ code: 'path_refused' });
      await expect(sandbox.readFile('../etc/hostname')).rejects.toMatchObject({ code: 'path_refused' });
      await expect(sandbox.exec('pwd', { cwd: '..' })).rejects.toMatchObject({ code: 'path_refused' });
      await expect(sandbox.readFile('missing.txt')).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      await sandbox.release();
    }

    // An orphan: a sandbox of this app tagged with a session that has no record; and a sandbox of
    // someone else's in the same app, without Patchbay's tag, which the reaper leaves alone.
    const { ModalClient } = await import('modal');
    const client = new ModalClient({
      tokenId: fake.tokenId,
      tokenSecret: fake.tokenSecret,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    const modalApp = await client.apps.fromName('patchbay-test', { createIfMissing: true });
    const orphan = await client.sandboxes.create(modalApp, client.images.fromRegistry('debian:bookworm-slim'), {
      tags: { patchbay: 'session-sandbox', 'patchbay-session': 'gone-session' },
    });
    const foreign = await client.sandboxes.create(modalApp, client.images.fromRegistry('debian:bookworm-slim'), {
      tags: { 'patchbay-session': 'not-ours' },
    });
    // Sandboxes the earlier tests left running belong to sessions this database never had: orphans too.
    const orphans = [...fake.sandboxes.values()]
      .filter((sb) => !sb.result && sb.tags.some((t) => t.tagName === 'patchbay' && t.tagValue === 'session-sandbox'))
      .flatMap((sb) =>
        sb.tags.filter((t) => t.tagName === 'patchbay-session' && t.tagValue !== id).map((t) => t.tagValue),
      );
    expect(orphans).toContain('gone-session');
    expect((await sandboxes.reap()).sort()).toEqual(orphans.sort());
    expect(await orphan.poll()).toBe(137);
    expect(await foreign.poll()).toBeNull();
    expect(await (await client.sandboxes.fromId(first.sandboxId)).poll()).toBeNull();
    // Past the TTL, the session's own idle sandbox goes too (its work is in its snapshot).
    expect(await sandboxes.reap(new Date(Date.now() + 2 * 24 * 60 * 60_000))).toEqual([id]);
    expect(fake.sandboxes.get(first.sandboxId)!.result).toMatchObject({ status: Status.TERMINATED });
    expect((await modalSandboxRecord(app, id)).sandbox_id).toBeNull();
    expect(fake.refusals).toEqual([]);
  });

  it("starts a repository's next session from its setup image, fetching only what is new", {
    timeout: 120_000,
  }, async () => {
    const repo = await createRemote();
    try {
      await repo.pushCommit('package.json', '{"name":"demo","version":"1.0.0"}\n', 'package');
      await mkdir(join(repo.root, 'scratch', '.github', 'workflows'), { recursive: true });
      await repo.pushCommit(
        '.github/workflows/ci.yml',
        'on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: npm install --offline --no-audit --no-fund && echo ran >> .setup-runs\n',
        'ci',
      );
      // One Patchbay (one database) for both sessions; each session's turns follow its own transcript.
      const lookAround = (messages: readonly { role: string }[]) =>
        messages.filter((m) => m.role === 'assistant').length === 0
          ? { toolCalls: [{ name: 'run_shell', input: { command: 'git log --format=%s | head -3; cat .setup-runs' } }] }
          : { text: 'Looked around.' };
      const scripted = createScriptedProvider({ scenario: (messages) => lookAround(messages) });
      app = await modal.startPatchbay({ model: scripted });
      const run = async (text: string) => {
        const id = await startWebSession(app!, { text, repo: repo.remote });
        const done = await waitForStatus(app!, id, ['completed', 'failed'], 90_000);
        expect(done.status, done.error ?? '').toBe('completed');
        const setupRuns = await app!.store.events(done.id, { types: ['check-finished'] });
        const shell = scripted.requests.at(-1)!.messages.find((m) => m.role === 'tool' && m.name === 'run_shell');
        const sandbox = sessionSandboxes(fake, done.id)[0]!;
        const template = await app!.database.db.selectFrom('modal_templates').selectAll().executeTakeFirst();
        return { setupRuns, shell: shell?.role === 'tool' ? shell.content : '', sandbox, template };
      };

      const first = await run('Look around');
      expect(first.setupRuns.map((e) => e.event)).toEqual([
        expect.objectContaining({ phase: 'setup', outcome: 'passed' }),
      ]);
      expect(first.shell).toContain('ran\n');
      expect(first.template).toMatchObject({ base_commit: await repo.remoteBranch('main') });
      const setupImage = fake.images.get(first.template!.image_id);
      expect(setupImage).toMatchObject({ kind: 'snapshot', fromSandbox: first.sandbox.sandboxId });

      // The default branch moves on; the next session starts from the setup image and fetches the new commit.
      await repo.pushCommit('NEWS.md', 'news\n', 'news arrived');
      const second = await run('Look around again');
      expect(second.sandbox.imageId).toBe(first.template!.image_id);
      // Its checkout is at the new base, and the setup output of the image is there. The setup
      // commands and lockfiles are those the image's setup ran for, so setup is not run again
      // (issue 19: setup per workspace, cached by what it depends on).
      expect(second.shell).toContain('news arrived\nci\npackage\nran\n');
      expect(second.shell).not.toContain('ran\nran\n');
      // The bundle written into the second sandbox held only the new commit, not the whole history.
      const seedBytes = (sandbox: typeof first.sandbox) =>
        [...sandbox.execs.values()]
          .filter((e) => e.args.includes('/tmp/patchbay-seed.bundle'))
          .map((e) => e.stdinOffset);
      const [full] = seedBytes(first.sandbox);
      const [incremental] = seedBytes(second.sandbox);
      expect(incremental).toBeLessThan(full! * 0.7);
      expect(second.template).toMatchObject({ base_commit: await repo.remoteBranch('main') });
      expect(second.template!.image_id).not.toBe(first.template!.image_id);
      expect(fake.refusals).toEqual([]);
    } finally {
      await repo.cleanup();
    }
  });

  it("resumes a sandbox that died mid-command from Modal's exit snapshot, with nothing lost", {
    timeout: 90_000,
  }, async () => {
    const model = createScriptedProvider({
      scenario: (messages) => {
        const turn = messages.filter((m) => m.role === 'assistant').length;
        if (turn === 0) return { toolCalls: [{ name: 'write_file', input: { path: 'BETA.md', content: 'beta\n' } }] };
        if (turn === 1)
          return { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 30', timeout_seconds: 120 } }] };
        if (turn === 2) return { toolCalls: [{ name: 'run_shell', input: { command: 'cat BETA.md' } }] };
        return { text: 'BETA.md is in place.' };
      },
    });
    // Default snapshot interval: no snapshot of ours holds BETA.md when the sandbox dies.
    app = await modal.startPatchbay({ model });
    const id = await startWebSession(app, { text: 'Add beta', repo: remote.remote });
    await waitFor(
      async () => (await app!.store.events(id, { types: ['tool-start'] })).length >= 2,
      'the sleep to start',
    );
    const sandbox = sessionSandboxes(fake, id)[0]!;
    expect(sandbox.definition).toMatchObject({ experimentalOptionsV2: { enable_exit_snapshot: 'true' } });
    await waitFor(
      async () => [...sandbox.execs.values()].some((exec) => exec.args.includes('sleep 30') && !exec.exit),
      'the sleep to run in the sandbox',
    );
    fake.kill(sandbox.sandboxId);
    expect((await waitForStatus(app, id, ['failed', 'completed'], 30_000)).status).toBe('failed');

    await app.service.sendMessage(id, changelogRequester, 'Please go on');
    const done = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    expect(done.status, done.error ?? '').toBe('completed');
    expect(await git(remote.remote, 'show', `${done.result!.commit}:BETA.md`)).toBe('beta');
    const second = sessionSandboxes(fake, id)[1]!;
    expect(fake.images.get(second.imageId)).toMatchObject({ kind: 'snapshot', fromSandbox: sandbox.sandboxId });
    // Nothing was lost, so the agent is not told to redo anything.
    expect((await app.store.events(id, { types: ['run-resumed'] })).length).toBe(0);
    expect(fake.refusals).toEqual([]);
  });
});
