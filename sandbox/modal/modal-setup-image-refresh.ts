import { assertCommandEnv, type Sandbox, type SandboxSpec } from '../sandbox.ts';
import type { ModalImageLike, ModalSandboxLike } from './modal-client.ts';
import { MODAL_WORKDIR, type ModalContext, networkParams, REFRESH_TAG, snapshotTtlMs } from './modal-context.ts';
import { modalError } from './modal-errors.ts';
import { toExecResult } from './modal-exec.ts';
import { createModalFiles } from './modal-files.ts';
import { argvExec, shellExec } from './modal-sandbox-commands.ts';
import { probeImage, sandboxLimits } from './modal-sandbox-create.ts';

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

/** SetupImageRefresh.refreshSetupImage on Modal. */
export async function refreshSetupImage(
  ctx: ModalContext,
  template: SetupImage,
  spec: Pick<SandboxSpec, 'network'>,
  work: (sandbox: Sandbox) => Promise<{ commit: string }>,
): Promise<{ outcome: 'recorded' | 'superseded'; imageId: string }> {
  const sandbox = await createRefreshSandbox(ctx, template, spec);
  try {
    await probeImage(ctx.settings.image, sandbox);
    const { commit } = await work(refreshHandle(sandbox));
    const snapshot = await sandbox
      .snapshotFilesystem({ ttlMs: snapshotTtlMs(ctx.settings) })
      .catch((error: unknown) => Promise.reject(modalError(error, 'snapshotting the refreshed setup image')));
    const recorded = await ctx.store.replaceTemplate(template.repo, template.imageId, {
      imageId: snapshot.imageId,
      baseCommit: commit,
    });
    return { outcome: recorded ? 'recorded' : 'superseded', imageId: snapshot.imageId };
  } finally {
    await sandbox
      .terminate()
      .catch((error: unknown) =>
        ctx.log.warn({ err: error, sandboxId: sandbox.sandboxId }, 'could not terminate a setup-image refresh sandbox'),
      );
    sandbox.detach();
  }
}

async function createRefreshSandbox(
  ctx: ModalContext,
  template: SetupImage,
  spec: Pick<SandboxSpec, 'network'>,
): Promise<ModalSandboxLike> {
  let image: ModalImageLike;
  try {
    image = await ctx.client.images.fromId(template.imageId);
  } catch (error) {
    throw modalError(error, `loading the setup image ${template.imageId}`);
  }
  try {
    return await ctx.client.sandboxes.create(await ctx.app(), image, {
      ...sandboxLimits(ctx.settings),
      tags: { ...REFRESH_TAG },
      ...networkParams(ctx, spec.network),
    });
  } catch (error) {
    throw modalError(error, 'creating a sandbox to refresh a setup image');
  }
}

/** A plain handle on a refresh sandbox: commands and files, no session record, no snapshots of its own. */
function refreshHandle(sandbox: ModalSandboxLike): Sandbox {
  // A refresh sandbox is not watched: nothing ends a command early for its sake.
  const never = new Promise<string>(() => undefined);
  const at = { workdir: MODAL_WORKDIR, sandboxEnded: never };
  const files = createModalFiles((args, opts) => argvExec(sandbox, args, opts, at), MODAL_WORKDIR);
  return {
    sessionId: 'setup-image-refresh',
    workdir: MODAL_WORKDIR,
    async exec(command, opts = {}) {
      assertCommandEnv(opts.env);
      return toExecResult(await shellExec(sandbox, command, opts, at));
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
