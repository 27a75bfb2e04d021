export type { ExecOptions, ExecResult, FileEntry, Sandbox, SandboxProvider, SandboxSpec } from './sandbox.ts';
export {
  createLocalSandboxProvider,
  DEFAULT_EXEC_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  SANDBOX_WORKDIR,
  type LocalSandboxMode,
  type LocalSandboxProvider,
  type LocalSandboxProviderOptions,
} from './local-sandbox-provider.ts';
export { checkBubblewrap } from './check-bubblewrap.ts';
export { buildBwrapArgs, ETC_PATHS, STANDARD_PATH, SYSTEM_PATHS, type BwrapArgsInput, type HostSystemEntry } from './bwrap-args.ts';
export { assertSessionId } from './workspace-store.ts';
export { createModalSandboxProvider, MODAL_WORKDIR, SESSION_TAG, type ModalClientLike, type ModalSandboxProvider, type ModalSettings, type SetupImage, type SetupImageRefresh } from './modal/modal-sandbox-provider.ts';
export type { ModalRecordStore, ModalSessionRecord } from './modal/modal-records.ts';
export { modalLogger } from './modal/modal-logger.ts';
