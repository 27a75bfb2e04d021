export type { ExecOptions, Sandbox, SandboxProvider } from './sandbox.ts';
export {
  createLocalSandboxProvider,
  type LocalSandboxMode,
  type LocalSandboxProvider,
  type LocalSandboxProviderOptions,
} from './local-sandbox-provider.ts';
export { checkBubblewrap } from './check-bubblewrap.ts';
export { buildBwrapArgs, type BwrapArgsInput } from './bwrap-args.ts';
export {
  createModalSandboxProvider,
  type ModalClientLike,
  type ModalSandboxProvider,
} from './modal/modal-sandbox-provider.ts';
export { modalLogger } from './modal/modal-logger.ts';
