import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import type { ModalImageLike } from './modal-client.ts';
import type { ModalContext } from './modal-context.ts';
import { modalError } from './modal-errors.ts';

/** MODAL_IMAGE as an image: an image id as it is, a registry image with the configured Dockerfile commands. */
export async function baseImage(ctx: ModalContext): Promise<ModalImageLike> {
  const { client, settings } = ctx;
  if (/^im-/.test(settings.image))
    return client.images
      .fromId(settings.image)
      .catch((error: unknown) => Promise.reject(modalError(error, `looking up MODAL_IMAGE ${settings.image}`)));
  return client.images.fromRegistry(settings.image).dockerfileCommands(settings.dockerfileCommands);
}

/** The repository's setup image, when one was saved and Modal still has it. */
export async function templateImage(
  ctx: ModalContext,
  repo: string,
  sessionLog: Logger,
): Promise<ModalImageLike | undefined> {
  const template = await ctx.store.getTemplate(repo);
  if (!template) return undefined;
  try {
    return await ctx.client.images.fromId(template.imageId);
  } catch (error) {
    sessionLog.info({ err: error, imageId: template.imageId }, 'the setup image is gone; starting from the base image');
    return undefined;
  }
}

/**
 * The session's snapshot, or undefined when Modal no longer has it (its TTL, MODAL_SNAPSHOT_TTL_DAYS,
 * ran out): the session then starts again from the repository, where the harness restores its
 * database checkpoint or its pushed branch. Any other failure to load it ends the run.
 */
export async function sessionSnapshot(
  ctx: ModalContext,
  session: { sessionId: string; log: Logger; epoch: number | undefined },
  imageId: string,
): Promise<ModalImageLike | undefined> {
  try {
    return await ctx.client.images.fromId(imageId);
  } catch (error) {
    const err = error as { code?: unknown; name?: string };
    if (err.code !== 5 && err.name !== 'NotFoundError') {
      throw new PatchbayError(
        'sandbox_failed',
        `The snapshot of this session's sandbox (${imageId}) could not be loaded: ${modalError(error, 'loading it').message}`,
        { cause: error },
      );
    }
    session.log.warn(
      { imageId },
      "the session's snapshot is gone (past MODAL_SNAPSHOT_TTL_DAYS?); starting from the repository, the stored checkpoint and the pushed branch",
    );
    await ctx.store.save(session.sessionId, { imageId: null, snapshotAt: null }, session.epoch);
    return undefined;
  }
}
