import sharp from 'sharp';
import type { ArtifactStore } from '../../core/artifact-store.ts';
import { type ImageIntake, type IncomingFile, type IntakeResult, sizeText } from '../../core/attachment.ts';
import { sniffImageType } from '../../core/image-format.ts';
import type { ImageMediaType } from '../../core/transcript.ts';

/** The caps on pictures coming in. */
export type IntakeLimits = {
  /** The largest file accepted, before scaling (IMAGE_MAX_BYTES). */
  maxBytes: number;
  /** The most pictures one message may carry (IMAGE_MAX_PER_MESSAGE). */
  maxPerMessage: number;
  /** The long side a picture is scaled down to: Anthropic's guidance is 1568 px. */
  maxSide: number;
  /** The most bytes a picture may have after scaling: Anthropic refuses images over 5 MB. */
  maxModelBytes: number;
};

export const defaultIntakeLimits: IntakeLimits = {
  maxBytes: 10 * 1024 * 1024,
  maxPerMessage: 5,
  maxSide: 1568,
  maxModelBytes: 5 * 1024 * 1024,
};

/** The image intake on `sharp`: checks, scales and keeps each picture as a waiting attachment. */
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
  const fitted = await fitForModel(file.bytes, mediaType, limits).catch(() => undefined);
  if (!fitted) return refused(file, 'the image could not be read');
  if (fitted.bytes.byteLength > limits.maxModelBytes)
    return refused(file, `it is still larger than ${sizeText(limits.maxModelBytes)} after scaling`);
  const kept = await deps.artifacts.keepAttachment({ sourceKey: file.sourceKey, name: file.name, ...fitted });
  return {
    kind: 'kept',
    attachment: { artifactId: kept.id, mediaType: fitted.mediaType, name: file.name, byteSize: kept.byteSize },
  };
}

type Fitted = { bytes: Uint8Array; mediaType: ImageMediaType; width: number; height: number };

/**
 * The picture as the model gets it: scaled to at most `maxSide` on its long side, and re-encoded
 * (JPEG, then smaller) while it is over the model's byte cap. A picture within both is kept as is.
 */
async function fitForModel(bytes: Uint8Array, mediaType: ImageMediaType, limits: IntakeLimits): Promise<Fitted> {
  const meta = await sharp(bytes).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (width === 0 || height === 0) throw new Error('no dimensions');
  const tooLarge = Math.max(width, height) > limits.maxSide;
  if (!tooLarge && bytes.byteLength <= limits.maxModelBytes) return { bytes, mediaType, width, height };
  const resized = sharp(bytes, { animated: false }).resize({
    width: limits.maxSide,
    height: limits.maxSide,
    fit: 'inside',
    withoutEnlargement: true,
  });
  const png = await resized.clone().png().toBuffer({ resolveWithObject: true });
  if (png.data.byteLength <= limits.maxModelBytes && mediaType === 'image/png') return fittedFrom(png, 'image/png');
  for (const quality of [85, 70, 50]) {
    const jpeg = await resized.clone().jpeg({ quality }).toBuffer({ resolveWithObject: true });
    if (jpeg.data.byteLength <= limits.maxModelBytes) return fittedFrom(jpeg, 'image/jpeg');
  }
  return fittedFrom(png, 'image/png');
}

function fittedFrom(out: { data: Buffer; info: sharp.OutputInfo }, mediaType: ImageMediaType): Fitted {
  return { bytes: new Uint8Array(out.data), mediaType, width: out.info.width, height: out.info.height };
}

function refused(file: IncomingFile, reason: string): IntakeResult {
  return { kind: 'refused', name: file.name, reason };
}
