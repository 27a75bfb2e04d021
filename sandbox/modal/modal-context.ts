import type { Logger } from 'pino';
import type { EgressRule } from '../egress-policy.ts';
import type { SandboxSpec } from '../sandbox.ts';
import type { ModalClientLike } from './modal-client.ts';
import { modalError } from './modal-errors.ts';
import { type ModalNetworkParams, modalNetwork } from './modal-network.ts';
import type { ModalRecordStore } from './modal-records.ts';

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
  /** PUBLIC_URL's host when engines run here: their sandboxes reach the relay there, besides the allowlist. */
  relayHost?: string | undefined;
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
/** On the sandboxes the setup-image refresher makes (the reaper leaves them alone; they end with their run or at Modal's time limit). */
export const REFRESH_TAG = { patchbay: 'setup-image-refresh' } as const;
/** A sandbox this close to its time limit (or a quarter of it) is snapshotted and replaced on the next acquire; a held one is snapshotted this long before it. */
export const EXPIRY_MARGIN_MS = 3 * 60_000;
const DEFAULT_SNAPSHOT_RETRY_DELAYS_MS = [1_000, 3_000];

/**
 * What every part of the Modal provider works with: the client, the record store, the settings
 * with their defaults filled in, and the one piece of state they share in this process (`held`).
 */
export type ModalContext = {
  client: ModalClientLike;
  store: ModalRecordStore;
  settings: ModalSettings;
  egressRules: readonly EgressRule[];
  relayHost: string | undefined;
  log: Logger;
  clock: () => Date;
  /** The Modal app every sandbox is made in, opened on first use (and again after a failure). */
  app: () => Promise<{ appId: string }>;
  /** Sessions whose sandbox a run in this process holds right now: the reaper leaves them alone. */
  heldSessions: Set<string>;
  ttlMinutes: number;
  watchIntervalMs: number;
  runMaxMs: number;
  snapshotRetryDelaysMs: readonly number[];
};

/** The provider's context from its options, with the defaults the options document. */
export function createModalContext(options: ModalSandboxProviderOptions): ModalContext {
  return {
    client: options.client,
    store: options.store,
    settings: options.settings,
    egressRules: options.egressRules,
    relayHost: options.relayHost,
    log: options.log.child({ component: 'sandbox', provider: 'modal' }),
    clock: options.clock ?? (() => new Date()),
    app: openModalApp(options.client, options.settings.appName),
    heldSessions: new Set<string>(),
    ttlMinutes: options.ttlMinutes,
    watchIntervalMs: options.watchIntervalMs ?? 3_000,
    runMaxMs: options.runMaxMs ?? 0,
    snapshotRetryDelaysMs: options.snapshotRetryDelaysMs ?? DEFAULT_SNAPSHOT_RETRY_DELAYS_MS,
  };
}

/** The named app, looked up (and made when missing) once; a failed lookup is tried again next time. */
function openModalApp(client: ModalClientLike, appName: string): () => Promise<{ appId: string }> {
  let app: Promise<{ appId: string }> | undefined;
  return () => {
    app ??= client.apps.fromName(appName, { createIfMissing: true }).catch((error: unknown) => {
      app = undefined;
      throw modalError(error, `opening the Modal app ${appName}`);
    });
    return app;
  };
}

/** How long Modal keeps a snapshot, in the unit its SDK takes. */
export function snapshotTtlMs(settings: ModalSettings): number {
  return settings.snapshotTtlDays * 86_400_000;
}

/** Modal's network params for `network`, with a warning for allowlist entries Modal cannot express. */
export function networkParams(ctx: ModalContext, network: SandboxSpec['network']): ModalNetworkParams {
  const { params, dropped } = modalNetwork(network, ctx.egressRules, ctx.relayHost);
  if (dropped.length > 0) ctx.log.warn({ dropped }, 'some SANDBOX_EGRESS_ALLOW entries cannot be expressed on Modal');
  return params;
}
