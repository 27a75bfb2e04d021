import type { SandboxProvider } from '../sandbox.ts';
import { acquireModalSandbox } from './modal-acquire.ts';
import { createModalContext, type ModalSandboxProviderOptions } from './modal-context.ts';
import { reapModalSandboxes } from './modal-reaper.ts';
import { refreshSetupImage, type SetupImageRefresh } from './modal-setup-image-refresh.ts';

export type { ModalClientLike } from './modal-client.ts';
export type { ModalSettings } from './modal-context.ts';
export type { SetupImage, SetupImageRefresh } from './modal-setup-image-refresh.ts';

export type ModalSandboxProvider = SandboxProvider & {
  readonly kind: 'modal';
  close(): Promise<void>;
} & SetupImageRefresh;

/**
 * The Modal SandboxProvider: one Modal sandbox per session, tagged with the session id, its id and
 * newest filesystem snapshot kept in the database. A follow-up reattaches to the live sandbox by id;
 * when it is gone (timed out, idle, died) the session continues in a new sandbox made from its
 * snapshot. Sandboxes run with no credentials and no host environment; the host does every
 * authenticated git step and moves the work in and out as bundles (putBytes/getBytes).
 *
 * The parts: acquiring a session's sandbox (modal-acquire.ts: reattach, restore, create), the run's
 * hold on it (modal-session-sandbox.ts: commands, files, snapshots, release), the reaper
 * (modal-reaper.ts) and the setup-image refresh (modal-setup-image-refresh.ts), all working with one
 * ModalContext.
 */
export function createModalSandboxProvider(options: ModalSandboxProviderOptions): ModalSandboxProvider {
  const ctx = createModalContext(options);
  return {
    kind: 'modal',
    close: async () => undefined, // handles detach on release; nothing process-wide to close
    acquire: (sessionId, spec) => acquireModalSandbox(ctx, sessionId, spec),
    setupImages: () => ctx.store.listTemplates(),
    refreshSetupImage: (template, spec, work) => refreshSetupImage(ctx, template, spec, work),
    reap: (now = ctx.clock()) => reapModalSandboxes(ctx, now),
  };
}
