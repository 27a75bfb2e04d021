import type { ImageMediaType } from './transcript.ts';

/**
 * The picture format the bytes are, from their magic bytes: PNG, JPEG, GIF or WebP. Undefined for
 * anything else, whatever its name says (a text file named `.png` is not a picture).
 */
export function sniffImageType(bytes: Uint8Array): ImageMediaType | undefined {
  const starts = (prefix: number[], at = 0) => prefix.every((b, i) => bytes[at + i] === b);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (starts([0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61)
    return 'image/gif';
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  return undefined;
}

/**
 * Anthropic's 5 MB limit on one image counts its base64 text, not its bytes (a 4.5 MB PNG is
 * 6.0 MB as base64 and is refused): the most raw bytes whose base64 stays within it.
 */
export const modelImageMaxBase64Bytes = 5 * 1024 * 1024;
export const modelImageMaxBytes = (modelImageMaxBase64Bytes / 4) * 3;

/** A picture scaled for the model, or why it could not be. */
export type FittedPicture =
  | { bytes: Uint8Array; mediaType: ImageMediaType; width: number; height: number }
  | { unfit: string };

/**
 * Scales a picture a tool took (its bytes come from the sandbox, so they are untrusted) to the
 * model's size, decoding it where a hostile picture costs only itself. Must not throw.
 */
export type PictureFitter = {
  /** The long side pictures are scaled to; a picture within it on both sides is kept as it is. */
  maxSide: number;
  fit(bytes: Uint8Array, mediaType: ImageMediaType): Promise<FittedPicture>;
};
