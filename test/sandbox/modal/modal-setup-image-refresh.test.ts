import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../../helpers/wait-for.ts';
import { Status, type FakeModal, type FakeSandboxRecord } from '../../fakes/modal/fake-modal.ts';
import {
  sessionSandboxes,
  startModalBackend,
  startWebSession,
  type ModalBackend,
} from '../../helpers/modal-patchbay.ts';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import { startPatchbay } from '../../../src/main.ts';

/**
 * The background refresh of Modal setup images (MODAL_TEMPLATE_REFRESH_MINUTES / _COMMITS), through
 * the real `modal` SDK against the loopback fake Modal (test/fakes/modal; the calls it covers are
 * listed in modal-session.test.ts: this file adds none) and the whole Patchbay on a test database.
 * The timer is left at its default (60 minutes, never firing here); each pass is `refreshOnce()`.
 */
describe('Modal setup images are refreshed in the background when the default branch moved far', () => {
  let fake: FakeModal;
  let app: PatchbayFixture | undefined;
  let modal: ModalBackend;
  const repos: RemoteFixture[] = [];

  beforeAll(async () => {
    modal = await startModalBackend();
    fake = modal.fake;
  });
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });
  afterAll(async () => {
    await modal.close();
    for (const repo of repos) await repo.cleanup();
  });

  /** Incompressible text, so a bundle's size says which commits it carries. */
  const noise = (bytes: number) => `${randomBytes(bytes).toString('base64')}\n`;

  /** A repository whose setup (from its CI workflow) installs and counts its runs in `.setup-runs`. */
  const setUpRepo = async () => {
    const repo = await createRemote();
    repos.push(repo);
    await repo.pushCommit('big.txt', noise(384 * 1024), 'a large history');
    await repo.pushCommit('package.json', '{"name":"demo","version":"1.0.0"}\n', 'package');
    await mkdir(join(repo.root, 'scratch', '.github', 'workflows'), { recursive: true });
    await repo.pushCommit(
      '.github/workflows/ci.yml',
      'on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: npm install --offline --no-audit --no-fund && echo ran >> .setup-runs\n',
      'ci',
    );
    return repo;
  };

  const start = async (extra: Pick<Parameters<ModalBackend['startPatchbay']>[0] & object, 'integrations'> = {}) => {
    const model = createScriptedProvider({
      scenario: (messages) =>
        messages.filter((m) => m.role === 'assistant').length === 0
          ? { toolCalls: [{ name: 'run_shell', input: { command: 'git log --format=%s | head -2; cat .setup-runs' } }] }
          : { text: 'Looked around.' },
    });
    app = await modal.startPatchbay({ model, env: { MODAL_TEMPLATE_REFRESH_COMMITS: '3' }, ...extra });
    return model;
  };

  const runSession = async (repo: RemoteFixture) => {
    const id = await startWebSession(app!, { text: 'Look around', repo: repo.remote });
    const done = await waitForStatus(app!, id, ['completed', 'failed'], 90_000);
    expect(done.status, done.error ?? '').toBe('completed');
    return sessionSandboxes(fake, done.id)[0]!;
  };
  const template = async (repo: RemoteFixture) =>
    app!.database.db
      .selectFrom('modal_templates')
      .selectAll()
      .where('repo', '=', repo.remote)
      .executeTakeFirstOrThrow();
  /** Bytes of the seed bundle the host wrote into a sandbox. */
  const seedBytes = (sandbox: FakeSandboxRecord) =>
    [...sandbox.execs.values()].filter((e) => e.args.includes('/tmp/patchbay-seed.bundle')).map((e) => e.stdinOffset);
  const refreshSandboxes = () =>
    [...fake.sandboxes.values()].filter((sb) =>
      sb.tags.some((t) => t.tagName === 'patchbay' && t.tagValue === 'setup-image-refresh'),
    );

  it('leaves an image whose branch moved less than the threshold, refreshes it from the old image with only the new commits once it moved that far, and the next session starts from the new one', {
    timeout: 180_000,
  }, async () => {
    const repo = await setUpRepo();
    await start();
    const first = await runSession(repo);
    const a = await repo.remoteBranch('main');
    const old = await template(repo);
    expect(old).toMatchObject({ base_commit: a });
    const [full] = seedBytes(first);
    expect(full).toBeGreaterThan(380_000);

    // Two commits ahead of a threshold of three: left alone, no sandbox started.
    await repo.pushCommit('move-1.txt', noise(48 * 1024), 'move 1');
    await repo.pushCommit('move-2.txt', noise(48 * 1024), 'move 2');
    expect(await app!.setupImageRefresher!.refreshOnce()).toEqual([{ repo: repo.remote, outcome: 'fresh', behind: 2 }]);
    expect(await template(repo)).toEqual(old);
    expect(refreshSandboxes()).toEqual([]);

    // Three ahead; while another process holds the repository's refresh lock, this one stays out.
    const b = await repo.pushCommit('move-3.txt', noise(48 * 1024), 'move 3');
    const other = new pg.Client({ connectionString: app!.database.url });
    await other.connect();
    try {
      expect(
        (await other.query('select pg_try_advisory_lock($1, hashtext($2)) as locked', [0x5042_0002, repo.remote]))
          .rows[0].locked,
      ).toBe(true);
      expect(await app!.setupImageRefresher!.refreshOnce()).toEqual([{ repo: repo.remote, outcome: 'busy' }]);
      expect(refreshSandboxes()).toEqual([]);
    } finally {
      await other.end();
    }

    const outcomes = await app!.setupImageRefresher!.refreshOnce();
    expect(outcomes).toEqual([
      { repo: repo.remote, outcome: 'refreshed', from: a, to: b, imageId: expect.stringMatching(/^im-/) },
    ]);
    const refreshed = await template(repo);
    expect(refreshed).toMatchObject({ base_commit: b, image_id: (outcomes[0] as { imageId: string }).imageId });
    const [refresher] = refreshSandboxes();
    // Started from the old image, sent only the three new commits (not the large history), set up
    // again on the new tip, snapshotted into the new image, and terminated.
    expect(refresher!.imageId).toBe(old.image_id);
    const [sent] = seedBytes(refresher!);
    expect(sent).toBeGreaterThan(140_000);
    expect(sent).toBeLessThan(260_000);
    expect(fake.images.get(refreshed.image_id)).toMatchObject({ kind: 'snapshot', fromSandbox: refresher!.sandboxId });
    expect(await git(join(refresher!.fsDir, 'workspace'), 'rev-parse', 'HEAD')).toBe(b);
    expect(await readFile(join(refresher!.fsDir, 'workspace', '.setup-runs'), 'utf8')).toBe('ran\nran\n');
    expect(refresher!.result).toMatchObject({ status: Status.TERMINATED });

    // One more small commit: the next session starts from the new image and is sent only that.
    await repo.pushCommit('NEWS.md', 'news\n', 'news arrived');
    const next = await runSession(repo);
    expect(next.imageId).toBe(refreshed.image_id);
    const [incremental] = seedBytes(next);
    expect(incremental).toBeLessThan(30_000);
    expect(fake.refusals).toEqual([]);
  });

  it('keeps the old image when the setup fails during a refresh, and skips a repository whose mirror cannot be refreshed', {
    timeout: 180_000,
  }, async () => {
    const repo = await setUpRepo();
    await start();
    await runSession(repo);
    const old = await template(repo);
    // A repository this worker cannot reach any more (its mirror cannot be refreshed).
    await app!.database.db
      .insertInto('modal_templates')
      .values({ repo: join(repo.root, 'gone.git'), image_id: old.image_id, base_commit: old.base_commit })
      .execute();

    await repo.pushCommit('move-1.txt', 'one\n', 'move 1');
    await repo.pushCommit('package.json', '{ not json\n', 'break the package');
    await repo.pushCommit('move-3.txt', 'three\n', 'move 3');
    const outcomes = await app!.setupImageRefresher!.refreshOnce();
    expect(outcomes).toEqual([
      {
        repo: join(repo.root, 'gone.git'),
        outcome: 'skipped',
        reason: expect.stringMatching(/^its mirror could not be refreshed: Repository \S+gone\.git does not exist/),
      },
      {
        repo: repo.remote,
        outcome: 'failed',
        reason: expect.stringMatching(
          /^setup command `npm install --offline --no-audit --no-fund && echo ran >> \.setup-runs` failed with exit [1-9]/,
        ),
      },
    ]);
    expect(await template(repo)).toEqual(old);
    const [refresher] = refreshSandboxes().filter((sb) => sb.imageId === old.image_id);
    expect(refresher!.result).toMatchObject({ status: Status.TERMINATED });
    // The same tip is not tried again on every pass; once the branch moves, it is.
    expect((await app!.setupImageRefresher!.refreshOnce())[1]).toEqual({
      repo: repo.remote,
      outcome: 'held',
      reason: expect.stringContaining('tried again once the default branch moves'),
    });
    expect(refreshSandboxes().filter((sb) => sb.imageId === old.image_id)).toHaveLength(1);
    await repo.pushCommit('package.json', '{"name":"demo","version":"1.0.1"}\n', 'mend the package');
    expect((await app!.setupImageRefresher!.refreshOnce())[1]).toMatchObject({
      repo: repo.remote,
      outcome: 'refreshed',
    });
    expect(fake.refusals).toEqual([]);
  });

  it('refreshes the mirror with the git credentials the harness uses, and keeps a newer image a session recorded while the refresh ran', {
    timeout: 180_000,
  }, async () => {
    const repo = await setUpRepo();
    const asked: string[] = [];
    const credentials = {
      name: 'test-credentials',
      async gitEnv(url: string) {
        asked.push(url);
        return {
          GIT_CONFIG_COUNT: '1',
          GIT_CONFIG_KEY_0: 'http.extraHeader',
          GIT_CONFIG_VALUE_0: 'Authorization: Bearer not-a-real-token',
        };
      },
    };
    await start({
      integrations: async () => [
        { replier: { source: 'slack', reply: async () => ({ state: null }) }, gitCredentials: credentials },
      ],
    });
    await runSession(repo);
    const old = await template(repo);
    for (const n of [1, 2, 3]) await repo.pushCommit(`move-${n}.txt`, `${n}\n`, `move ${n}`);
    const before = new Set(refreshSandboxes().map((sb) => sb.sandboxId));
    asked.length = 0;
    const pass = app!.setupImageRefresher!.refreshOnce();
    // While the refresh sandbox works, a session records its own (newer) setup image.
    const started = Date.now();
    while (!refreshSandboxes().some((sb) => !before.has(sb.sandboxId))) {
      if (Date.now() - started > 30_000) throw new Error('no refresh sandbox started');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const newer = {
      image_id: old.image_id.replace(/^im-/, 'im-session'),
      base_commit: await repo.remoteBranch('main'),
    };
    await app!.database.db.updateTable('modal_templates').set(newer).where('repo', '=', repo.remote).execute();
    expect(await pass).toEqual([{ repo: repo.remote, outcome: 'superseded' }]);
    expect(await template(repo)).toMatchObject(newer);
    expect(asked.length).toBeGreaterThanOrEqual(1);
    expect(new Set(asked)).toEqual(new Set([repo.remote]));
    expect(fake.refusals).toEqual([]);
  });

  it('two workers on one database (separate data directories) refresh a repository once, and a repository a worker cannot reach is logged once', {
    timeout: 180_000,
  }, async () => {
    const repo = await setUpRepo();
    await start();
    await runSession(repo);
    const old = await template(repo);
    const gone = join(repo.root, 'gone.git');
    await app!.database.db
      .insertInto('modal_templates')
      .values({ repo: gone, image_id: old.image_id, base_commit: old.base_commit })
      .execute();
    const otherDir = await mkdtemp(join(tmpdir(), 'patchbay-worker-'));
    const lines: string[] = [];
    const other = await startPatchbay(
      { ...app!.config, dataDir: otherDir },
      {
        log: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }),
        work: true,
        conversations: false,
        model: createScriptedProvider({ scenario: () => ({ text: 'unused' }) }),
        queue: { pollingIntervalSeconds: 0.5 },
      },
    );
    try {
      for (const n of [1, 2, 3]) await repo.pushCommit(`move-${n}.txt`, `${n}\n`, `move ${n}`);
      const before = refreshSandboxes().length;
      const [mine, theirs] = await Promise.all([
        app!.setupImageRefresher!.refreshOnce(),
        other.setupImageRefresher!.refreshOnce(),
      ]);
      const forRepo = [...mine, ...theirs]
        .filter((o) => o.repo === repo.remote)
        .map((o) => o.outcome)
        .sort();
      // The one that waited on the lock found the image busy, or already fresh once it got the lock.
      expect(forRepo[1]).toBe('refreshed');
      expect(['busy', 'fresh']).toContain(forRepo[0]);
      expect(refreshSandboxes().length - before).toBe(1);
      expect(await template(repo)).toMatchObject({ base_commit: await repo.remoteBranch('main') });

      // Two more passes, both skipping it: said once.
      for (const _ of [1, 2]) {
        expect(await other.setupImageRefresher!.refreshOnce()).toEqual([
          { repo: gone, outcome: 'skipped', reason: expect.stringContaining('does not exist') },
          { repo: repo.remote, outcome: 'fresh', behind: 0 },
        ]);
      }
      const skipped = lines
        .map((line) => JSON.parse(line) as { msg: string; repo?: string })
        .filter((entry) => entry.msg === 'skipping the setup-image refresh of a repository');
      expect(skipped).toEqual([expect.objectContaining({ repo: gone, level: 40 })]);
      expect(fake.refusals).toEqual([]);
    } finally {
      await other.close();
      await rm(otherDir, { recursive: true, force: true });
    }
  });

  it('stops a refresh under way when the worker shuts down: its sandbox is terminated and the old image stays', {
    timeout: 180_000,
  }, async () => {
    const repo = await setUpRepo();
    await start();
    await runSession(repo);
    const old = await template(repo);
    await repo.pushCommit('move-1.txt', '1\n', 'move 1');
    await repo.pushCommit('move-2.txt', '2\n', 'move 2');
    await repo.pushCommit(
      '.github/workflows/ci.yml',
      'on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: npm install --offline --no-audit --no-fund && sleep 60 && echo ran >> .setup-runs\n',
      'a slow setup',
    );
    const before = new Set(refreshSandboxes().map((sb) => sb.sandboxId));
    const pass = app!.setupImageRefresher!.refreshOnce();
    const started = Date.now();
    const findRefresher = () =>
      refreshSandboxes().find(
        (sb) =>
          !before.has(sb.sandboxId) && [...sb.execs.values()].some((e) => e.args.some((a) => a.includes('sleep 60'))),
      );
    let refresher: FakeSandboxRecord | undefined = findRefresher();
    for (; !refresher; refresher = findRefresher()) {
      if (Date.now() - started > 30_000)
        throw new Error(
          `the slow setup did not start in a refresh sandbox (the pass: ${JSON.stringify(await Promise.race([pass, 'running']))})`,
        );
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const stopping = Date.now();
    await app!.setupImageRefresher!.stop();
    expect(Date.now() - stopping).toBeLessThan(30_000);
    await expect(pass).rejects.toMatchObject({
      code: 'aborted',
      message: `the refresh of ${repo.remote}'s setup image was stopped`,
    });
    expect(refresher.result).toMatchObject({ status: Status.TERMINATED });
    expect(await template(repo)).toEqual(old);
    expect(fake.refusals).toEqual([]);
  });
});
