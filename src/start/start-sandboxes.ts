import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import {
  createLocalSandboxProvider,
  createModalSandboxProvider,
  modalLogger,
  type LocalSandboxProvider,
  type ModalClientLike,
  type ModalSandboxProvider,
} from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/sandbox.ts';
import type { DatabaseHandle } from '../../db/database.ts';
import type { Config } from '../config.ts';
import type { ModalConfig } from '../config/modal-config.ts';
import { PatchbayError } from '../core/errors.ts';
import { createModalRecordStore } from '../sessions/harness-stores/modal-record-store.ts';
import type { EgressWiring } from './egress-wiring.ts';
import type { EngineWiring } from './engine-wiring.ts';
import { engineImageCommands } from '../engines/engine-packages.ts';
import type { Shutdown } from './shutdown.ts';

/**
 * SANDBOX=local or unsafe-local, in a process that takes runs: the local sandboxes. Made before the
 * database starts, so a host that cannot sandbox fails fast.
 */
export async function startLocalSandboxes(
  config: Config,
  deps: { log: Logger; egress: EgressWiring; shutdown: Shutdown; engines?: EngineWiring | undefined },
): Promise<LocalSandboxProvider> {
  const { sandbox } = config;
  const local = await createLocalSandboxProvider({
    dataDir: config.dataDir,
    log: deps.log,
    ttlMinutes: sandbox.ttlMinutes,
    mode: sandbox.kind === 'local' ? 'bwrap' : 'unsafe-local',
    limits: sandbox.limits,
    limitMode: sandbox.limitMode,
    diskQuota: sandbox.diskQuota,
    usrLocal: sandbox.usrLocal,
    sandboxUser: sandbox.user,
    ...(sandbox.network === 'proxy' && {
      egress: { ...deps.egress.options, ...(deps.engines && { engineRelay: { url: deps.engines.relayUrl } }) },
    }),
    ...(deps.engines && { engineBinds: deps.engines.binds }),
  });
  deps.shutdown.add(() => local.close());
  return local;
}

/**
 * SANDBOX=modal with no credentials at all: refused at start, before the database, rather than a
 * worker that starts cleanly and fails every session when it first asks Modal for a sandbox.
 */
export function assertModalCredentials(modal: ModalConfig): void {
  if (modal.tokenId || existsSync(modal.configFile)) return;
  throw new PatchbayError(
    'config_invalid',
    `SANDBOX=modal needs Modal credentials: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (modal.com → Settings → API Tokens), or run \`modal token new\` to write ${modal.configFile}`,
  );
}

/**
 * SANDBOX=modal: the Modal SDK's client (it reads MODAL_SERVER_URL itself) and the records in the
 * database. With engines, a registry image gets their CLIs from npm, and sandboxes may reach
 * PUBLIC_URL's host, where this process serves the engine relay.
 */
export async function startModalSandboxes(
  config: Config,
  database: DatabaseHandle,
  log: Logger,
  engines?: Pick<EngineWiring, 'names'> | undefined,
): Promise<ModalSandboxProvider> {
  const modal = config.sandbox.modal;
  if (!modal) throw new PatchbayError('config_invalid', 'SANDBOX=modal without its settings');
  const client = await modalClient(modal, log);
  log.info({ app: modal.appName, image: modal.image, network: config.sandbox.network }, 'sandboxes run on Modal');
  const names = engines?.names ?? [];
  if (names.length > 0 && /^im-/.test(modal.image))
    log.warn({ engines: names }, "MODAL_IMAGE is an image id: it must hold the engines' CLIs (see docs/engines.md)");
  return createModalSandboxProvider({
    client,
    store: createModalRecordStore(database.db),
    settings: { ...modal, dockerfileCommands: [...modal.dockerfileCommands, ...engineImageCommands(names)] },
    egressRules: config.sandbox.egress.allow,
    ...(names.length > 0 && { relayHost: new URL(config.publicUrl).hostname }),
    log,
    ttlMinutes: config.sandbox.ttlMinutes,
    runMaxMs: config.limits.maxWallMs,
  });
}

async function modalClient(modal: ModalConfig, log: Logger): Promise<ModalClientLike> {
  // Loaded only when configured: the SDK takes a quarter of a second to load, on every restart.
  const { ModalClient } = await import('modal');
  try {
    return new ModalClient({
      ...(modal.tokenId && { tokenId: modal.tokenId }),
      ...(modal.tokenSecret && { tokenSecret: modal.tokenSecret }),
      logger: modalLogger(log),
    });
  } catch (error) {
    throw new PatchbayError(
      'config_invalid',
      `SANDBOX=modal: the Modal client could not be set up: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** Every ten minutes, the sandboxes' idle workspaces are removed. */
export function startWorkspaceReaper(sandboxes: SandboxProvider, deps: { log: Logger; shutdown: Shutdown }): void {
  const { log } = deps;
  const reaper = setInterval(() => {
    sandboxes.reap().then(
      (removed) => removed.length && log.info({ removed }, 'removed idle workspaces'),
      (error: unknown) => log.warn({ err: error }, 'workspace reaper failed'),
    );
  }, 10 * 60_000);
  reaper.unref();
  deps.shutdown.add(async () => clearInterval(reaper));
}
