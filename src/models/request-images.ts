import type { ModelImage, ModelMessage } from './model-provider.ts';

/** What one model request may carry in pictures: how many, and how large a side may be. */
export type RequestImageLimits = {
  maxImages: number;
  maxSide: number;
  /** Past this many pictures in one request, each side must be within `manyImagesMaxSide`. */
  manyImages: number;
  manyImagesMaxSide: number;
  /** The most base64 text all the pictures of one request may add up to. */
  maxTotalBase64: number;
};

/**
 * Anthropic's documented vision limits (docs.anthropic.com/en/docs/vision, "Basics and Limits"):
 * "up to 20 for claude.ai and 100 for API requests"; "If you submit an image larger than
 * 8000x8000 px, it will be rejected. If you submit more than 20 images in one API request, this
 * limit is 2000x2000 px."; "there is a 32MB request size limit for standard endpoints" (a larger
 * request gets 413 request_too_large), so the pictures keep to 24 MB of it and the text has the
 * rest. OpenAI's are looser ("Up to 500 individual images per request", "Up to 50 MB image bytes
 * per request", sides scaled by the API, not refused), so one rule, Anthropic's, serves every provider.
 */
export const requestImageLimits: RequestImageLimits = {
  maxImages: 100,
  maxSide: 8000,
  manyImages: 20,
  manyImagesMaxSide: 2000,
  maxTotalBase64: 24 * 1024 * 1024,
};

/** Where one picture sits in a transcript: the message, and its place among that message's pictures. */
type ImageAt = { message: number; index: number; image: ModelImage };

function imagesIn(messages: readonly ModelMessage[]): ImageAt[] {
  return messages.flatMap((m, message) =>
    m.role === 'assistant' ? [] : (m.images ?? []).map((image, index) => ({ message, index, image })),
  );
}

/**
 * The transcript as a request may carry it: past `maxImages` pictures the oldest are left out,
 * then any whose known size breaks the side rule for the count that is left (8000 px, or 2000 px
 * past 20 pictures) is left out too. Each left-out picture becomes a line of text in its message
 * saying what it was and why it is gone, so the model knows it was there. Unchanged (the same
 * array) when nothing had to go.
 */
export function fitRequestImages(
  messages: readonly ModelMessage[],
  limits: RequestImageLimits = requestImageLimits,
): { messages: readonly ModelMessage[]; dropped: number } {
  const all = imagesIn(messages);
  const excess = Math.max(0, all.length - limits.maxImages, all.length - withinBytes(all, limits.maxTotalBase64));
  const kept = all.slice(excess);
  const side = kept.length > limits.manyImages ? limits.manyImagesMaxSide : limits.maxSide;
  const drops = new Map<ImageAt, string>();
  for (const at of all.slice(0, excess))
    drops.set(
      at,
      `to fit the model's limit of ${limits.maxImages} pictures and ${sizeMb(limits.maxTotalBase64)} a request`,
    );
  for (const at of kept)
    if (Math.max(at.image.width ?? 0, at.image.height ?? 0) > side)
      drops.set(at, `because a side is over the ${side} px the model takes with ${kept.length} pictures in a request`);
  if (drops.size === 0) return { messages, dropped: 0 };
  return { messages: withoutImages(messages, drops), dropped: drops.size };
}

/** How many of the newest pictures fit in `budget` characters of base64 together. */
function withinBytes(images: readonly ImageAt[], budget: number): number {
  let total = 0;
  for (let i = images.length - 1; i >= 0; i--) {
    total += images[i]?.image.data.length ?? 0;
    if (total > budget) return images.length - 1 - i;
  }
  return images.length;
}

const sizeMb = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MB`;

/** The transcript without its `ordinal`th picture (counted from the first), which the model's API refused. */
export function dropImage(messages: readonly ModelMessage[], ordinal: number, reason: string): ModelMessage[] {
  const at = imagesIn(messages)[ordinal];
  if (!at) return [...messages];
  return withoutImages(messages, new Map([[at, reason]]));
}

/** The longest side a picture of this transcript may have in one request: 8000 px, or 2000 past 20 pictures. */
export function maxSideFor(messages: readonly ModelMessage[], limits: RequestImageLimits = requestImageLimits): number {
  const count = Math.min(imagesIn(messages).length, limits.maxImages);
  return count > limits.manyImages ? limits.manyImagesMaxSide : limits.maxSide;
}

/** The transcript with each picture replaced by what `change` makes of it; the same array when none changed. */
export async function mapImages(
  messages: readonly ModelMessage[],
  change: (image: ModelImage) => Promise<ModelImage>,
): Promise<readonly ModelMessage[]> {
  let changed = false;
  const out: ModelMessage[] = [];
  for (const m of messages) {
    if (m.role === 'assistant' || !m.images?.length) {
      out.push(m);
      continue;
    }
    const images: ModelImage[] = [];
    for (const image of m.images) images.push(await change(image));
    changed ||= images.some((image, i) => image !== m.images?.[i]);
    out.push({ ...m, images });
  }
  return changed ? out : messages;
}

function withoutImages(messages: readonly ModelMessage[], drops: Map<ImageAt, string>): ModelMessage[] {
  const out = [...messages];
  for (const [at, reason] of drops) {
    const m = out[at.message];
    if (!m || m.role === 'assistant') continue;
    const images = (m.images ?? []).filter((image) => image !== at.image);
    const content = [m.content, droppedNote(at.image, reason)].filter(Boolean).join('\n');
    out[at.message] = { ...m, content, images: images.length > 0 ? images : undefined };
  }
  return out;
}

function droppedNote(image: ModelImage, reason: string): string {
  const size = image.width && image.height ? `, ${image.width}×${image.height}` : '';
  return `[A picture was here (${image.name}${size}); it was dropped from the conversation ${reason}.]`;
}
