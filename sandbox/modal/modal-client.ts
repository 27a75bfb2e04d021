import type { ModalExecTarget } from './modal-exec.ts';

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

/** The part of the SDK's `Image` the provider uses: a registry image, an id, or a snapshot. */
export type ModalImageLike = { readonly imageId: string; dockerfileCommands(commands: string[]): ModalImageLike };

/** The part of the SDK's `Sandbox` the provider uses: commands, its state, snapshots and its end. */
export type ModalSandboxLike = ModalExecTarget & {
  readonly sandboxId: string;
  poll(): Promise<number | null>;
  terminate(): Promise<void>;
  snapshotFilesystem(params?: { timeoutMs?: number; ttlMs?: number | null }): Promise<{ imageId: string }>;
  getTags(): Promise<Record<string, string>>;
  experimentalGetExitSnapshot(params?: { timeoutMs?: number }): Promise<{ imageId: string }>;
  detach(): void;
};
