import type { ArtifactStore } from '../../core/artifact-store.ts';
import { type ImageIntake, type IncomingFile, type IntakeResult, sizeText } from '../../core/attachment.ts';
import { modelImageMaxBytes, type PictureFitter, sniffImageType } from '../../core/image-format.ts';
import { type DecodeLimits, defaultDecodeLimits, fitInChild } from './image-fit-process.ts';

/** The caps on pictures coming in. */
export type IntakeLimits = {
  /** The largest file accepted, before scaling (IMAGE_MAX_BYTES). */
  maxBytes: number;
  /** The most pictures one message may carry (IMAGE_MAX_PER_MESSAGE). */
  maxPerMessage: number;
  /** The long side a picture is scaled down to: Anthropic's guidance is 1568 px. */
  maxSide: number;
  /** The most bytes a picture may have after scaling: Anthropic refuses images over 5 MB as base64. */
  maxModelBytes: number;
  /** The most pixels a picture may have: more is refused from its header, before it is decoded. */
  maxPixels: number;
  /** What decoding one picture may cost (it is decoded in a process of its own, killed at the limit). */
  decode: DecodeLimits;
};

export const defaultIntakeLimits: IntakeLimits = {
  maxBytes: 10 * 1024 * 1024,
  maxPerMessage: 5,
  maxSide: 1568,
  maxModelBytes: modelImageMaxBytes,
  // Anthropic's largest picture is 8000 px a side.
  maxPixels: 64_000_000,
  decode: defaultDecodeLimits,
};

/**
 * The image intake on `sharp`: checks, scales and keeps each picture as a waiting attachment. Each
 * picture is decoded in a process of its own under CPU and time limits (fitInChild): anyone who
 * can post a picture could otherwise spend the server's CPU.
 */
export function createImageIntake(deps: {
  artifacts: Pick<ArtifactStore, 'keepAttachment'>;
  limits: IntakeLimits;
}): ImageIntake {
  const { limits } = deps;
  return {
    maxPerMessage: limits.maxPerMessage,
    maxBytes: limits.maxBytes,
    async take(files) {
      const results: IntakeResult[] = [];
      for (const [index, file] of files.entries()) {
        if (index >= limits.maxPerMessage) {
          results.push(refused(file, `a message may carry at most ${limits.maxPerMessage} images`));
          continue;
        }
        results.push(await takeOne(file, deps));
      }
      return results;
    },
  };
}

async function takeOne(file: IncomingFile, deps: Parameters<typeof createImageIntake>[0]): Promise<IntakeResult> {
  const { limits } = deps;
  if (file.bytes.byteLength > limits.maxBytes)
    return refused(file, `it is larger than the ${sizeText(limits.maxBytes)} limit`);
  const mediaType = sniffImageType(file.bytes);
  if (!mediaType) return refused(file, 'it is not a PNG, JPEG, GIF or WebP image');
  const { maxSide, maxModelBytes, maxPixels } = limits;
  const fitted = await fitInChild(file.bytes, mediaType, { maxSide, maxModelBytes, maxPixels }, limits.decode);
  if ('unfit' in fitted) return refused(file, fitted.unfit);
  if (fitted.bytes.byteLength > limits.maxModelBytes)
    return refused(file, `it is still larger than ${sizeText(limits.maxModelBytes)} after scaling`);
  const kept = await deps.artifacts.keepAttachment({ sourceKey: file.sourceKey, name: file.name, ...fitted });
  return {
    kind: 'kept',
    attachment: { artifactId: kept.id, mediaType: fitted.mediaType, name: file.name, byteSize: kept.byteSize },
  };
}

/**
 * The pictures tools take (screenshots), fitted as people's are: scaled to `maxSide` (1568 px,
 * under the 2000 px Anthropic allows a side once a request carries more than 20 pictures, so the
 * count never matters) and within the 5 MB cap, decoded in a process of their own under the
 * same limits, since the bytes come from the sandbox.
 */
export function createPictureFitter(limits: IntakeLimits): PictureFitter {
  const { maxSide, maxModelBytes, maxPixels } = limits;
  return {
    maxSide,
    fit: (bytes, mediaType) => fitInChild(bytes, mediaType, { maxSide, maxModelBytes, maxPixels }, limits.decode),
  };
}

function refused(file: IncomingFile, reason: string): IntakeResult {
  return { kind: 'refused', name: file.name, reason };
}
