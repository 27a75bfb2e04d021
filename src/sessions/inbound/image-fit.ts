import sharp from 'sharp';
import type { ImageMediaType } from '../../core/transcript.ts';

/** What fitting a picture for the model may use: its long side and bytes after, and the pixels read. */
export type FitLimits = {
  /** The long side a picture is scaled down to. */
  maxSide: number;
  /** The most bytes a picture may have after scaling. */
  maxModelBytes: number;
  /** The most pixels a picture may have before scaling: more is refused before it is decoded. */
  maxPixels: number;
};

export type Fitted = { bytes: Uint8Array; mediaType: ImageMediaType; width: number; height: number };

/** A picture that cannot be fitted, with the reason the thread is told. */
export class Unfit extends Error {}

/**
 * The picture as the model gets it: scaled to at most `maxSide` on its long side, and re-encoded
 * (JPEG, then smaller) while it is over the model's byte cap. A picture within both is kept as is.
 * The header is read first: a picture of more than `maxPixels` is refused without being decoded.
 */
export async function fitForModel(bytes: Uint8Array, mediaType: ImageMediaType, limits: FitLimits): Promise<Fitted> {
  const meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (width === 0 || height === 0) throw new Unfit('the image could not be read');
  if (width * height > limits.maxPixels)
    throw new Unfit(
      `it has ${megapixels(width * height)} (${width}×${height}); the limit is ${megapixels(limits.maxPixels)}`,
    );
  const tooLarge = Math.max(width, height) > limits.maxSide;
  if (!tooLarge && bytes.byteLength <= limits.maxModelBytes) return { bytes, mediaType, width, height };
  const resized = sharp(bytes, { animated: false, limitInputPixels: limits.maxPixels }).resize({
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

const megapixels = (pixels: number) => `${(pixels / 1_000_000).toFixed(1)} megapixels`;
