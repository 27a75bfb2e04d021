import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import type { EgressRule } from '../egress-policy.ts';
import {
  assertCommandEnv,
  type ExecOptions,
  type Sandbox,
  type SandboxProvider,
  type SandboxSpec,
} from '../sandbox.ts';
import { assertSessionId } from '../workspace-store.ts';
import { describeSandboxEnd, modalError } from './modal-errors.ts';
import { runModalExec, toExecResult, type ModalExecTarget } from './modal-exec.ts';
import { createModalFiles, type RunInSandbox } from './modal-files.ts';
import { fenceModalSandbox } from './fenced-modal-sandbox.ts';
import { modalNetwork } from './modal-network.ts';
import type { ModalRecordStore, ModalSessionRecord } from './modal-records.ts';

/** The part of `ModalClient` (modal 0.11.1) the provider uses; the composition root passes the real one. */
export type ModalClientLike = {
  apps: { fromName(name: string, params?: { createIfMissing?: boolean }): Promise<{ appId: string }> };
  images: {
    fromRegistry(tag: string): ModalImageLike;
    fromId(imageId: string): Promise<ModalImageLike>;
  };
  sandboxes: {
    create(app: { appId: string }, image: ModalImageLike, params: Record<string, unknown>): Promise<ModalSandboxLike>;
    fromId(sandboxId: string): Promise<ModalSandboxLike>;
    list(params: { appId?: string; tags?: Record<string, string> }): AsyncGenerator<ModalSandboxLike, void, unknown>;
  };
};
export type ModalImageLike = { readonly imageId: string; dockerfileCommands(commands: string[]): ModalImageLike };
export type ModalSandboxLike = ModalExecTarget & {
  readonly sandboxId: string;
  poll(): Promise<number | null>;
  terminate(): Promise<void>;
  snapshotFilesystem(params?: { timeoutMs?: number; ttlMs?: number | null }): Promise<{ imageId: string }>;
  getTags(): Promise<Record<string, string>>;
  experimentalGetExitSnapshot(params?: { timeoutMs?: number }): Promise<{ imageId: string }>;
  detach(): void;
};

export type ModalSettings = {
  appName: string;
  /** A registry image (`node:22-bookworm-slim`) or an image id (`im-…`). */
  image: string;
  /** Added to a registry image (the default image gets git, ripgrep, Node and Python this way). */
  dockerfileCommands: string[];
  cpu?: number;
  memoryMiB?: number;
  timeoutMinutes: number;
  /** Idle sandboxes end after this long; their work was snapshotted when their run let go. */
  idleTimeoutMinutes: number;
  /** Snapshot a busy sandbox after a step when its last snapshot is older than this (0: after every step), so a lost sandbox costs at most this much work. */
  snapshotEveryMinutes: number;
  /** How long snapshots are kept (Modal deletes them after). */
  snapshotTtlDays: number;
  /** Create sandboxes with Modal's exit snapshots (experimental in the SDK), taken when one ends. */
  exitSnapshots: boolean;
};

export type ModalSandboxProviderOptions = {
  client: ModalClientLike;
  store: ModalRecordStore;
  settings: ModalSettings;
  /** The egress allowlist, for SANDBOX_NETWORK=proxy. */
  egressRules: readonly EgressRule[];
  log: Logger;
  /** Sandboxes whose last run ended longer ago than this are terminated by reap(). */
  ttlMinutes: number;
  clock?: () => Date;
  /** How often a sandbox is checked while a command runs in it (default 3 s). */
  watchIntervalMs?: number;
  /** The longest a run may take (RUN_MAX_MINUTES): a sandbox with less time left than that is not reattached. */
  runMaxMs?: number;
  /** Pause before each retry of a snapshot that failed when a run let go (default 1 s, then 3 s). */
  snapshotRetryDelaysMs?: readonly number[];
};

export const MODAL_WORKDIR = '/workspace';
export const SESSION_TAG = 'patchbay-session';
/** On every sandbox Patchbay makes, so the reaper lists only its own in a shared app. */
export const KIND_TAG = { patchbay: 'session-sandbox' } as const;
const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** A sandbox this close to its time limit (or a quarter of it) is snapshotted and replaced on the next acquire; a held one is snapshotted this long before it. */
const EXPIRY_MARGIN_MS = 3 * 60_000;
const DEFAULT_SNAPSHOT_RETRY_DELAYS_MS = [1_000, 3_000];

export type ModalSandboxProvider = SandboxProvider & {
  readonly kind: 'modal';
  close(): Promise<void>;
} & SetupImageRefresh;

/** A repository's setup image: a snapshot of a sandbox just after the repository's setup ran at `baseCommit`. */
export type SetupImage = { repo: string; imageId: string; baseCommit: string };

/** What the background refresher of setup images needs from the provider (it never sees Modal itself). */
export type SetupImageRefresh = {
  setupImages(): Promise<SetupImage[]>;
  /**
   * Starts a sandbox (no session's) from `image`, lets `work` bring its workspace up to date, and,
   * when work returns a commit, snapshots the sandbox and records the snapshot as the repository's
   * setup image for that commit, unless a newer image was recorded meanwhile ('superseded'). The
   * old image stays recorded until then; when work throws, nothing is recorded. The sandbox is
   * terminated either way.
   */
  refreshSetupImage(
    image: SetupImage,
    spec: Pick<SandboxSpec, 'network'>,
    work: (sandbox: Sandbox) => Promise<{ commit: string }>,
  ): Promise<{ outcome: 'recorded' | 'superseded'; imageId: string }>;
};
/** On the sandboxes the setup-image refresher makes (the reaper leaves them alone; they end with their run or at Modal's time limit). */
export const REFRESH_TAG = { patchbay: 'setup-image-refresh' } as const;

/**
 * The Modal SandboxProvider: one Modal sandbox per session, tagged with the session id, its id and
 * newest filesystem snapshot kept in the database. A follow-up reattaches to the live sandbox by id;
 * when it is gone (timed out, idle, died) the session continues in a new sandbox made from its
 * snapshot. Sandboxes run with no credentials and no host environment; the host does every
 * authenticated git step and moves the work in and out as bundles (putBytes/getBytes).
 */
export function createModalSandboxProvider(options: ModalSandboxProviderOptions): ModalSandboxProvider {
  const { client, store, settings } = options;
  const log = options.log.child({ component: 'sandbox', provider: 'modal' });
  const clock = options.clock ?? (() => new Date());
  const watchIntervalMs = options.watchIntervalMs ?? 3_000;
  let app: Promise<{ appId: string }> | undefined;
  const appHandle = () => {
    app ??= client.apps.fromName(settings.appName, { createIfMissing: true }).catch((error: unknown) => {
      app = undefined;
      throw modalError(error, `opening the Modal app ${settings.appName}`);
    });
    return app;
  };
  const baseImage = async (): Promise<ModalImageLike> => {
    if (/^im-/.test(settings.image))
      return client.images
        .fromId(settings.image)
        .catch((error: unknown) => Promise.reject(modalError(error, `looking up MODAL_IMAGE ${settings.image}`)));
    return client.images.fromRegistry(settings.image).dockerfileCommands(settings.dockerfileCommands);
  };
  const networkFor = (spec: SandboxSpec) => {
    const { params, dropped } = modalNetwork(spec.network, options.egressRules);
    if (dropped.length > 0) log.warn({ dropped }, 'some SANDBOX_EGRESS_ALLOW entries cannot be expressed on Modal');
    return params;
  };
  const held = new Set<string>();
  /** The repository's setup image, when one was saved and Modal still has it. */
  const templateImage = async (repo: string, sessionLog: Logger): Promise<ModalImageLike | undefined> => {
    const template = await store.getTemplate(repo);
    if (!template) return undefined;
    try {
      return await client.images.fromId(template.imageId);
    } catch (error) {
      sessionLog.info(
        { err: error, imageId: template.imageId },
        'the setup image is gone; starting from the base image',
      );
      return undefined;
    }
  };

  const createSandbox = async (
    sessionId: string,
    spec: SandboxSpec,
    image: ModalImageLike,
  ): Promise<ModalSandboxLike> => {
    const timeoutMs = settings.timeoutMinutes * 60_000;
    // The record exists (with a fresh use time) before the sandbox does, so a reaper on another
    // worker never takes the new sandbox for an orphan.
    await store.save(sessionId, { usedAt: clock() }, spec.epoch);
    try {
      const sandbox = await client.sandboxes.create(await appHandle(), image, {
        timeoutMs,
        idleTimeoutMs: settings.idleTimeoutMinutes * 60_000,
        // No sandbox workdir: an image without /workspace would fail to start; every command names its
        // own, and the probe makes the directory.
        ...(settings.cpu !== undefined && { cpu: settings.cpu }),
        ...(settings.memoryMiB !== undefined && { memoryMiB: settings.memoryMiB }),
        tags: { ...KIND_TAG, [SESSION_TAG]: sessionId },
        ...networkFor(spec),
        ...(settings.exitSnapshots && { experimentalOptions: { enable_exit_snapshot: true } }),
      });
      await store.save(
        sessionId,
        {
          sandboxId: sandbox.sandboxId,
          expiresAt: new Date(clock().getTime() + timeoutMs),
          usedAt: clock(),
          released: false,
        },
        spec.epoch,
      );
      try {
        await probeImage(sandbox);
      } catch (error) {
        // Nothing ran in it: no work to take over from it next time.
        await store.save(sessionId, { sandboxId: null, released: true }, spec.epoch);
        throw error;
      }
      return fenceModalSandbox(sandbox, { store, sessionId, epoch: spec.epoch });
    } catch (error) {
      throw modalError(error, 'creating a sandbox');
    }
  };

  /**
   * A new sandbox must be able to run what Patchbay runs in it (sh, git, and setsid to end a
   * command's whole process tree), with the workspace directory there: a custom MODAL_IMAGE that
   * lacks one fails the run here, saying what is missing, instead of every command failing later.
   */
  const probeImage = async (sandbox: ModalSandboxLike): Promise<void> => {
    const script = `mkdir -p ${MODAL_WORKDIR} && for tool in git setsid; do command -v "$tool" >/dev/null 2>&1 || { echo "$tool"; exit 3; }; done`;
    let detail: string;
    try {
      const proc = await sandbox.exec(['sh', '-c', script], {
        mode: 'binary',
        stdout: 'pipe',
        stderr: 'pipe',
        workdir: '/',
        timeoutMs: 120_000,
      });
      const [out, err, code] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.wait(),
      ]);
      if (code === 0) return;
      detail =
        code === 3 ? `it has no ${out.trim()}` : `sh -c failed with exit ${code}: ${(err || out).trim().slice(0, 300)}`;
    } catch (error) {
      detail = modalError(error, 'probing the image').message;
    }
    await sandbox.terminate().catch(() => undefined);
    throw new PatchbayError(
      'sandbox_unavailable',
      `The Modal image ${settings.image} cannot run Patchbay's commands (${detail}): MODAL_IMAGE needs sh, git, coreutils and setsid`,
    );
  };

  /**
   * A sandbox that ended (time or idle limit, a lost container, terminated) leaves an exit snapshot
   * of its filesystem at that moment when it was created with them on: the session continues from
   * it with nothing lost. When Modal could not make one, the last snapshot of our own stands.
   */
  const takeExitSnapshot = async (
    sessionId: string,
    sandbox: ModalSandboxLike,
    epoch: number | undefined,
  ): Promise<void> => {
    if (settings.exitSnapshots) {
      try {
        const image = await sandbox.experimentalGetExitSnapshot({ timeoutMs: 60_000 });
        await store.save(
          sessionId,
          { sandboxId: null, imageId: image.imageId, snapshotAt: clock(), released: true },
          epoch,
        );
        log.info(
          { sessionId, sandboxId: sandbox.sandboxId, imageId: image.imageId },
          'took the exit snapshot of an ended sandbox',
        );
        return;
      } catch (error) {
        log.warn(
          { sessionId, sandboxId: sandbox.sandboxId, err: error },
          'no exit snapshot of the ended sandbox; continuing from the last snapshot',
        );
      }
    }
    await store.save(sessionId, { sandboxId: null }, epoch);
  };

  /**
   * The session's snapshot, or undefined when Modal no longer has it (its TTL, MODAL_SNAPSHOT_TTL_DAYS,
   * ran out): the session then starts again from the repository, where the harness restores its
   * database checkpoint or its pushed branch. Any other failure to load it ends the run.
   */
  const sessionSnapshot = async (
    sessionId: string,
    imageId: string,
    sessionLog: Logger,
    epoch: number | undefined,
  ): Promise<ModalImageLike | undefined> => {
    try {
      return await client.images.fromId(imageId);
    } catch (error) {
      const err = error as { code?: unknown; name?: string };
      if (err.code !== 5 && err.name !== 'NotFoundError') {
        throw new PatchbayError(
          'sandbox_failed',
          `The snapshot of this session's sandbox (${imageId}) could not be loaded: ${modalError(error, 'loading it').message}`,
          { cause: error },
        );
      }
      sessionLog.warn(
        { imageId },
        "the session's snapshot is gone (past MODAL_SNAPSHOT_TTL_DAYS?); starting from the repository, the stored checkpoint and the pushed branch",
      );
      await store.save(sessionId, { imageId: null, snapshotAt: null }, epoch);
      return undefined;
    }
  };

  /** The session's live sandbox, or undefined when it has ended (or is about to reach its limit). */
  const liveSandbox = async (
    sessionId: string,
    record: ModalSessionRecord | undefined,
    epoch: number | undefined,
  ): Promise<ModalSandboxLike | undefined> => {
    if (!record?.sandboxId) return undefined;
    const sandbox = fenceModalSandbox(await client.sandboxes.fromId(record.sandboxId), { store, sessionId, epoch });
    let exit: number | null;
    try {
      exit = await sandbox.poll();
    } catch (error) {
      if ((error as { code?: number }).code === 5 || (error as Error).name === 'NotFoundError') return undefined;
      throw modalError(error, `checking sandbox ${record.sandboxId}`);
    }
    if (exit !== null) {
      await takeExitSnapshot(sessionId, sandbox, epoch);
      return undefined;
    }
    // A run must fit in what is left, or Modal ends the sandbox under it.
    const margin = Math.max(
      EXPIRY_MARGIN_MS,
      (settings.timeoutMinutes * 60_000) / 4,
      (options.runMaxMs ?? 0) + EXPIRY_MARGIN_MS,
    );
    if (record.expiresAt && record.expiresAt.getTime() - clock().getTime() < margin) {
      // Too close to Modal's limit for a run: save it and move on to a fresh one.
      let image: { imageId: string };
      try {
        image = await sandbox.snapshotFilesystem({ ttlMs: settings.snapshotTtlDays * 86_400_000 });
      } catch (error) {
        // Ending it now would lose whatever only it holds: use it once more rather.
        log.warn(
          { sessionId, sandboxId: sandbox.sandboxId, err: error },
          'could not snapshot a sandbox near its time limit; reattaching to it instead of replacing it',
        );
        return sandbox;
      }
      await store.save(sessionId, { imageId: image.imageId, snapshotAt: clock(), released: true }, epoch);
      await sandbox.terminate().catch(() => undefined);
      await store.save(sessionId, { sandboxId: null }, epoch);
      log.info(
        {
          sessionId,
          sandboxId: sandbox.sandboxId,
          leftMs: record.expiresAt.getTime() - clock().getTime(),
          neededMs: margin,
        },
        'the session sandbox has too little time left for a run; continuing in a new one from its snapshot',
      );
      return undefined;
    }
    return sandbox;
  };

  return {
    kind: 'modal',
    close: async () => undefined, // handles detach on release; nothing process-wide to close

    async acquire(sessionId, spec) {
      assertSessionId(sessionId);
      const sessionLog = log.child({ sessionId });
      if (spec.epoch !== undefined) await store.assertEpoch(sessionId, spec.epoch);
      let record = await store.get(sessionId);
      let sandbox = await liveSandbox(sessionId, record, spec.epoch);
      // An ended sandbox may have just left its exit snapshot in the record.
      if (!sandbox && record?.sandboxId) record = await store.get(sessionId);
      let restoredNote: string | undefined;
      const snapshotImage =
        !sandbox && record?.imageId
          ? await sessionSnapshot(sessionId, record.imageId, sessionLog, spec.epoch)
          : undefined;
      if (sandbox) {
        // Under the run's lease: a run that was taken over meanwhile gets no sandbox (lease_lost).
        await store.save(sessionId, { usedAt: clock() }, spec.epoch);
        sessionLog.info({ sandboxId: sandbox.sandboxId }, 'reattached to the session sandbox');
      } else if (record?.imageId && snapshotImage) {
        sandbox = await createSandbox(sessionId, spec, snapshotImage);
        if (!record.released) {
          const at = record.snapshotAt?.toISOString() ?? 'an earlier point';
          restoredNote = `The sandbox this session worked in was lost before its work was saved. The workspace was restored from a snapshot taken at ${at}: changes made after that are not in it. Check the workspace (git status, git log) and redo what is missing before going on.`;
        }
        sessionLog.info(
          { sandboxId: sandbox.sandboxId, imageId: record.imageId, lost: !record.released },
          'session sandbox restored from its snapshot',
        );
      } else {
        if (record?.sandboxId || (record && !record.released)) {
          restoredNote =
            'The sandbox this session worked in was lost before any of its work was saved. The workspace starts again from the branch as it was pushed (or its base): check it and redo what is missing.';
        }
        const template = spec.repo ? await templateImage(spec.repo, sessionLog) : undefined;
        sandbox = await createSandbox(sessionId, spec, template ?? (await baseImage()));
        sessionLog.info({ sandboxId: sandbox.sandboxId, template: template?.imageId }, 'session sandbox created');
      }
      held.add(sessionId);
      return openHandle(
        sessionId,
        sandbox,
        (await store.get(sessionId))?.expiresAt ?? null,
        restoredNote,
        sessionLog,
        spec.epoch,
      );
    },

    setupImages: () => store.listTemplates(),

    async refreshSetupImage(template, spec, work) {
      let image: ModalImageLike;
      try {
        image = await client.images.fromId(template.imageId);
      } catch (error) {
        throw modalError(error, `loading the setup image ${template.imageId}`);
      }
      let sandbox: ModalSandboxLike;
      try {
        sandbox = await client.sandboxes.create(await appHandle(), image, {
          timeoutMs: settings.timeoutMinutes * 60_000,
          idleTimeoutMs: settings.idleTimeoutMinutes * 60_000,
          ...(settings.cpu !== undefined && { cpu: settings.cpu }),
          ...(settings.memoryMiB !== undefined && { memoryMiB: settings.memoryMiB }),
          tags: { ...REFRESH_TAG },
          ...networkFor({ network: spec.network }),
        });
      } catch (error) {
        throw modalError(error, 'creating a sandbox to refresh a setup image');
      }
      try {
        await probeImage(sandbox);
        const { commit } = await work(refreshHandle(sandbox));
        const snapshot = await sandbox
          .snapshotFilesystem({ ttlMs: settings.snapshotTtlDays * 86_400_000 })
          .catch((error: unknown) => Promise.reject(modalError(error, 'snapshotting the refreshed setup image')));
        const recorded = await store.replaceTemplate(template.repo, template.imageId, {
          imageId: snapshot.imageId,
          baseCommit: commit,
        });
        return { outcome: recorded ? 'recorded' : 'superseded', imageId: snapshot.imageId };
      } finally {
        await sandbox
          .terminate()
          .catch((error: unknown) =>
            log.warn({ err: error, sandboxId: sandbox.sandboxId }, 'could not terminate a setup-image refresh sandbox'),
          );
        sandbox.detach();
      }
    },

    async reap(now = clock()) {
      const removed: string[] = [];
      const tracked = await store.bySandbox();
      const { appId } = await appHandle();
      for await (const sandbox of client.sandboxes.list({ appId, tags: KIND_TAG })) {
        const record = tracked.get(sandbox.sandboxId);
        let sessionId = record?.sessionId;
        let reason: string | undefined;
        if (!record) {
          const tags = await sandbox.getTags().catch(() => ({}) as Record<string, string>);
          sessionId = tags[SESSION_TAG];
          if (!sessionId) continue; // not one of ours
          const current = await store.get(sessionId);
          // A session whose record moved on (or never existed) left this one behind; a record used
          // in the last minutes may belong to a sandbox being created right now.
          if (!current || now.getTime() - current.usedAt.getTime() > 5 * 60_000) reason = 'orphaned';
        } else if (
          record.released &&
          !held.has(record.sessionId) &&
          now.getTime() - record.usedAt.getTime() > options.ttlMinutes * 60_000
        ) {
          reason = 'idle';
        }
        if (!reason || !sessionId) continue;
        try {
          await sandbox.terminate();
          if (record) await store.save(sessionId, { sandboxId: null });
          removed.push(sessionId);
          log.info({ sessionId, sandboxId: sandbox.sandboxId, reason }, 'terminated a Modal sandbox');
        } catch (error) {
          log.warn({ err: error, sandboxId: sandbox.sandboxId }, 'could not terminate a Modal sandbox');
        }
      }
      return removed;
    },
  };

  /** A plain handle on a refresh sandbox: commands and files, no session record, no snapshots of its own. */
  function refreshHandle(sandbox: ModalSandboxLike): Sandbox {
    const never = new Promise<string>(() => undefined);
    const run: RunInSandbox = (args, opts) =>
      runModalExec(sandbox, {
        args,
        workdir: MODAL_WORKDIR,
        env: { LANG: 'C.UTF-8' },
        timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxOutputBytes: opts.maxOutputBytes,
        sandboxEnded: never,
        ...(opts.stdin && { stdin: opts.stdin }),
      });
    const files = createModalFiles(run, MODAL_WORKDIR);
    return {
      sessionId: 'setup-image-refresh',
      workdir: MODAL_WORKDIR,
      async exec(command, opts = {}) {
        assertCommandEnv(opts.env);
        return toExecResult(await shellExec(sandbox, command, opts, { workdir: MODAL_WORKDIR, sandboxEnded: never }));
      },
      readFile: (path) => files.readFile(path),
      writeFile: (path, content) => files.writeFile(path, content),
      listFiles: (path, listOptions) => files.listFiles(path, listOptions),
      putBytes: (path, data) => files.putBytes(path, data),
      getBytes: (path, maxBytes) => files.getBytes(path, maxBytes),
      release: async () => undefined,
      destroy: async () => undefined,
    };
  }

  function openHandle(
    sessionId: string,
    sandbox: ModalSandboxLike,
    expiresAt: Date | null,
    restoredNote: string | undefined,
    sessionLog: Logger,
    epoch: number | undefined,
  ): Sandbox {
    let state: 'open' | 'released' | 'destroyed' = 'open';
    let ended: PatchbayError | undefined;
    let endedResolve: (reason: string) => void = () => undefined;
    const endedPromise = new Promise<string>((resolve) => {
      endedResolve = resolve;
    });
    let lastSnapshot = Date.now();
    let busy = 0;
    // Modal ends the sandbox at its time limit whatever it is doing: save the work just before.
    const expiryTimer = expiresAt
      ? setTimeout(
          () => void snapshot('time limit near'),
          Math.max(0, expiresAt.getTime() - clock().getTime() - EXPIRY_MARGIN_MS),
        )
      : undefined;
    expiryTimer?.unref();

    const markEnded = (reason: string) => {
      if (ended) return;
      ended = new PatchbayError(
        'sandbox_failed',
        `The Modal sandbox ${sandbox.sandboxId} ended while this session was working in it: ${reason}. Send a message to resume: the session continues in a new sandbox from the sandbox's last snapshot.`,
      );
      endedResolve(reason);
      // The record keeps the sandbox's id: the next acquire takes its exit snapshot.
      sessionLog.warn({ sandboxId: sandbox.sandboxId, reason }, 'Modal sandbox ended under a run');
    };
    // While commands run, look at the sandbox itself: the SDK keeps retrying calls to a task that is
    // gone, so its death is seen here rather than as a hang.
    let watch: NodeJS.Timeout | undefined;
    const startWatch = () => {
      if (watch || ended) return;
      watch = setInterval(() => {
        sandbox.poll().then(
          (exit) => exit !== null && markEnded(describeSandboxEnd(exit)),
          () => undefined,
        );
      }, watchIntervalMs);
    };
    const stopWatch = () => {
      clearInterval(watch);
      watch = undefined;
    };
    // A command whose start, input or output failed may have failed because the sandbox ended under
    // it (its router is gone): say that, which a message resumes from, rather than what the SDK saw.
    const explain = async (error: unknown): Promise<never> => {
      if (!ended) {
        const exit = await sandbox.poll().catch(() => null);
        if (exit !== null) markEnded(describeSandboxEnd(exit));
      }
      throw ended ?? error;
    };
    const assertUsable = () => {
      if (ended) throw ended;
      if (state !== 'open') throw new PatchbayError('sandbox_failed', `sandbox for session ${sessionId} was ${state}`);
    };

    const snapshot = async (why: string): Promise<string | undefined> => {
      const started = Date.now();
      try {
        const image = await sandbox.snapshotFilesystem({ ttlMs: settings.snapshotTtlDays * 86_400_000 });
        lastSnapshot = Date.now();
        await store.save(sessionId, { imageId: image.imageId, snapshotAt: clock() }, epoch);
        sessionLog.info({ imageId: image.imageId, why, ms: Date.now() - started }, 'session sandbox snapshotted');
        return image.imageId;
      } catch (error) {
        sessionLog.warn({ err: error, why }, 'could not snapshot the session sandbox');
        return undefined;
      }
    };

    const run: RunInSandbox = async (args, opts) => {
      assertUsable();
      busy++;
      startWatch();
      try {
        const output = await runModalExec(sandbox, {
          args,
          workdir: MODAL_WORKDIR,
          env: { LANG: 'C.UTF-8' },
          timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          maxOutputBytes: opts.maxOutputBytes,
          sandboxEnded: endedPromise,
          ...(opts.stdin && { stdin: opts.stdin }),
        }).catch(explain);
        if (output.sandboxEnded) markEnded(output.sandboxEnded);
        assertUsable();
        return output;
      } finally {
        if (--busy === 0) stopWatch();
      }
    };
    const files = createModalFiles(run, MODAL_WORKDIR);

    const afterUse = async () => {
      await store.save(sessionId, { usedAt: clock() }, epoch).catch(() => undefined);
      if (Date.now() - lastSnapshot >= settings.snapshotEveryMinutes * 60_000) await snapshot('periodic');
    };

    const handle: Sandbox = {
      sessionId,
      workdir: MODAL_WORKDIR,
      ...(restoredNote && { restoredNote }),
      async exec(command, opts = {}) {
        assertUsable();
        assertCommandEnv(opts.env);
        const cwd = opts.cwd && opts.cwd !== '.' ? await files.resolveDir(opts.cwd) : MODAL_WORKDIR;
        busy++;
        startWatch();
        try {
          const output = await shellExec(sandbox, command, opts, { workdir: cwd, sandboxEnded: endedPromise }).catch(
            explain,
          );
          if (output.sandboxEnded) markEnded(output.sandboxEnded);
          assertUsable();
          return toExecResult(output);
        } finally {
          if (--busy === 0) stopWatch();
          if (!ended) await afterUse();
        }
      },
      readFile: (path) => files.readFile(path),
      async writeFile(path, content) {
        await files.writeFile(path, content);
        await afterUse();
      },
      listFiles: (path, listOptions) => files.listFiles(path, listOptions),
      putBytes: (path, data) => files.putBytes(path, data),
      getBytes: (path, maxBytes) => files.getBytes(path, maxBytes),
      failure: () => ended,
      async checkpoint(checkpointOptions) {
        assertUsable();
        const imageId = await snapshot(checkpointOptions?.template ? 'setup' : 'checkpoint');
        if (imageId && checkpointOptions?.template) {
          await store.saveTemplate(checkpointOptions.template.repo, {
            imageId,
            baseCommit: checkpointOptions.template.commit,
          });
        }
      },
      async release() {
        if (state !== 'open') return;
        state = 'released';
        stopWatch();
        clearTimeout(expiryTimer);
        held.delete(sessionId);
        if (!ended) {
          // The work is saved before the sandbox is left to its idle limit, so nothing depends on it staying up.
          let imageId = await snapshot('release');
          for (const delay of options.snapshotRetryDelaysMs ?? DEFAULT_SNAPSHOT_RETRY_DELAYS_MS) {
            if (imageId) break;
            await new Promise((resolve) => setTimeout(resolve, delay));
            imageId = await snapshot('release, again');
          }
          if (imageId) {
            await store.save(sessionId, { released: true, usedAt: clock() }, epoch);
          } else {
            // Not released: the sandbox alone holds the latest work, so the reaper leaves it, the next
            // run reattaches to it, and its release snapshots again.
            await store.save(sessionId, { released: false, usedAt: clock() }, epoch);
            sessionLog.warn(
              { sandboxId: sandbox.sandboxId },
              'the session sandbox could not be snapshotted; it stays unreleased and its next run snapshots it again',
            );
          }
        }
        sandbox.detach();
        sessionLog.debug('sandbox released');
      },
      async destroy() {
        if (state === 'destroyed') return;
        state = 'destroyed';
        stopWatch();
        clearTimeout(expiryTimer);
        held.delete(sessionId);
        await sandbox
          .terminate()
          .catch((error: unknown) => sessionLog.warn({ err: error }, 'could not terminate the Modal sandbox'));
        await store.save(sessionId, { sandboxId: null, imageId: null, snapshotAt: null, released: true }, epoch);
        sandbox.detach();
      },
    };
    return handle;
  }
}

/** Runs `command` with `sh -c` in the sandbox as `opts` ask (its env already checked). */
function shellExec(
  sandbox: ModalSandboxLike,
  command: string,
  opts: ExecOptions,
  at: { workdir: string; sandboxEnded: Promise<string> },
) {
  return runModalExec(sandbox, {
    args: ['sh', '-c', command],
    workdir: at.workdir,
    env: { LANG: 'C.UTF-8', ...opts.env },
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxOutputBytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    sandboxEnded: at.sandboxEnded,
    ...(opts.signal && { signal: opts.signal }),
    ...(opts.stdin !== undefined && { stdin: Buffer.from(opts.stdin, 'utf8') }),
  });
}
