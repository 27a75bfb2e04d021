import { PatchbayError } from '../../src/core/errors.ts';
import type { SandboxSpec } from '../sandbox.ts';
import type { ModalImageLike, ModalSandboxLike } from './modal-client.ts';
import {
  KIND_TAG,
  MODAL_WORKDIR,
  type ModalContext,
  type ModalSettings,
  networkParams,
  SESSION_TAG,
} from './modal-context.ts';
import { modalError } from './modal-errors.ts';
import { fenceModalSandbox } from './fenced-modal-sandbox.ts';

/** The `sandboxes.create` params every Patchbay sandbox shares: Modal's time limits and the machine size. */
export function sandboxLimits(settings: ModalSettings) {
  return {
    timeoutMs: settings.timeoutMinutes * 60_000,
    idleTimeoutMs: settings.idleTimeoutMinutes * 60_000,
    // No sandbox workdir: an image without /workspace would fail to start; every command names its
    // own, and the probe makes the directory.
    ...(settings.cpu !== undefined && { cpu: settings.cpu }),
    ...(settings.memoryMiB !== undefined && { memoryMiB: settings.memoryMiB }),
  };
}

/**
 * A new sandbox for the session from `image`, recorded, probed and fenced by the run's epoch. The
 * record exists (with a fresh use time) before the sandbox does, so a reaper on another worker
 * never takes the new sandbox for an orphan.
 */
export async function createSessionSandbox(
  ctx: ModalContext,
  sessionId: string,
  spec: SandboxSpec,
  image: ModalImageLike,
): Promise<ModalSandboxLike> {
  const { client, store, settings, clock } = ctx;
  const timeoutMs = settings.timeoutMinutes * 60_000;
  await store.save(sessionId, { usedAt: clock() }, spec.epoch);
  try {
    const sandbox = await client.sandboxes.create(await ctx.app(), image, {
      ...sandboxLimits(settings),
      tags: { ...KIND_TAG, [SESSION_TAG]: sessionId },
      ...networkParams(ctx, spec.network),
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
      await probeImage(settings.image, sandbox);
    } catch (error) {
      // Nothing ran in it: no work to take over from it next time.
      await store.save(sessionId, { sandboxId: null, released: true }, spec.epoch);
      throw error;
    }
    return fenceModalSandbox(sandbox, { store, sessionId, epoch: spec.epoch });
  } catch (error) {
    throw modalError(error, 'creating a sandbox');
  }
}

/**
 * A new sandbox must be able to run what Patchbay runs in it (sh, git, and setsid to end a
 * command's whole process tree), with the workspace directory there: a custom MODAL_IMAGE that
 * lacks one fails the run here, saying what is missing, instead of every command failing later.
 */
export async function probeImage(imageName: string, sandbox: ModalSandboxLike): Promise<void> {
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
    `The Modal image ${imageName} cannot run Patchbay's commands (${detail}): MODAL_IMAGE needs sh, git, coreutils and setsid`,
  );
}
