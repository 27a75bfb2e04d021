import sharp from 'sharp';
/**
 * What the model APIs refuse in an image they are sent, as the fakes enforce it: a format other
 * than PNG, JPEG, GIF or WebP, bytes that are not the format the request names, and sizes over the
 * documented caps (Anthropic: 5 MB per image counted as base64 text, 8000 px a side; OpenAI: 20 MB per image, below).
 */
export const anthropicMaxImageBytes = 5 * 1024 * 1024;
export const openaiMaxImageBytes = 20 * 1024 * 1024;

const mediaTypes = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** The media type the bytes are, from their magic number. */
export function sniffImage(bytes: Buffer): string | undefined {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (/^GIF8[79]a/.test(bytes.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  return undefined;
}

/** Why an image given as base64 with a media type is refused, or undefined. */
export function imageError(
  mediaType: unknown,
  data: unknown,
  maxBytes: number,
  where: string,
  measure: 'bytes' | 'base64' = 'bytes',
): string | undefined {
  if (typeof mediaType !== 'string' || !mediaTypes.includes(mediaType))
    return `${where}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
  if (typeof data !== 'string' || data.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(data))
    return `${where}.data: The image data is not valid base64`;
  const bytes = Buffer.from(data, 'base64');
  const size = measure === 'base64' ? data.length : bytes.length;
  if (size > maxBytes)
    return `${where}: image exceeds ${maxBytes / 1024 / 1024} MB maximum: ${size} bytes > ${maxBytes} bytes`;
  const actual = sniffImage(bytes);
  if (actual !== mediaType)
    return `${where}: The image was specified using the ${mediaType} media type, but the image appears to be a ${actual ?? 'unsupported'} image`;
  return undefined;
}

/** A refusal as OpenAI's error body carries it: the message, and its `code` and `param` (null when it has none). */
export type OpenAIRefusal = { message: string; code: string | null; param: string | null };

/** One picture of an OpenAI request: its data URL and the place the API would name it by. */
export type OpenAIImagePart = { where: string; url: unknown };

const openaiFormats = "['png', 'jpeg', 'gif', 'webp']";

/**
 * OpenAI's rules on a request's pictures, with the refusals recorded from the API (400
 * invalid_request_error). Documented (platform.openai.com/docs/guides/images-vision, "Image input
 * requirements"): PNG, JPEG, WEBP, non-animated GIF; "Up to 20MB per image", "Up to 500 individual
 * images per request", "Up to 50 MB image bytes per request". Recorded:
 * - a part that is not a data URL with bytes: "Invalid 'input[101].content[1].image_url'. Expected a
 *   base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='),
 *   but got empty base64-encoded bytes." (github.com/anomalyco/opencode/issues/23983), param the part;
 * - a format it does not take: "You uploaded an unsupported image. Please make sure your image has of
 *   one the following formats: ['png', 'jpeg', 'gif', 'webp']." code invalid_image_format
 *   (github.com/STranslate/STranslate/issues/277);
 * - over 20 MB: "You uploaded an unsupported image. Please make sure your image is below 20 MB in size
 *   and is of one the following formats: […]." code sanitizer_server_error (github.com/CosmosShadow/gptpdf/issues/6);
 * - bytes it cannot decode: "Invalid image." with no param and no code
 *   (github.com/ijwfly/chatgpt-tg/issues/14, github.com/Kav-K/GPTDiscord/issues/443).
 * No refusal of the count or the total was found recorded; their messages here state the documented limit.
 */
export async function openaiRequestImageError(parts: readonly OpenAIImagePart[]): Promise<OpenAIRefusal | undefined> {
  if (parts.length > 500)
    return { message: `Too many images: ${parts.length} > 500 per request.`, code: null, param: null };
  const decoded = parts.map((part) => ({ ...part, ...decodeDataUrl(part.url) }));
  const total = decoded.reduce((sum, part) => sum + (part.bytes?.length ?? 0), 0);
  if (total > 50 * 1024 * 1024)
    return { message: `Too much image data: ${total} bytes > 50 MB per request.`, code: null, param: null };
  for (const part of decoded) {
    const refusal = await openaiImageError(part);
    if (refusal) return refusal;
  }
  return undefined;
}

function decodeDataUrl(url: unknown): { mediaType?: string | undefined; bytes?: Buffer } {
  const match = typeof url === 'string' ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
  if (!match?.[2] || !/^[A-Za-z0-9+/]+={0,2}$/.test(match[2])) return {};
  return { mediaType: match[1], bytes: Buffer.from(match[2], 'base64') };
}

async function openaiImageError(part: OpenAIImagePart & { mediaType?: string | undefined; bytes?: Buffer }) {
  const { where, mediaType, bytes } = part;
  if (!bytes || bytes.length === 0)
    return {
      message: `Invalid '${where}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got empty base64-encoded bytes.`,
      code: 'invalid_value',
      param: where,
    };
  if (bytes.length > openaiMaxImageBytes)
    return {
      message: `You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ${openaiFormats}.`,
      code: 'sanitizer_server_error',
      param: null,
    };
  const actual = sniffImage(bytes);
  if (!actual || actual !== mediaType)
    return {
      message: `You uploaded an unsupported image. Please make sure your image has of one the following formats: ${openaiFormats}.`,
      code: 'invalid_image_format',
      param: null,
    };
  try {
    await sharp(bytes).raw().toBuffer();
  } catch {
    return { message: 'Invalid image.', code: null, param: null };
  }
  return undefined;
}

/**
 * Anthropic's rules on a request's pictures taken together (docs.anthropic.com/en/docs/vision):
 * at most 100 per API request, none larger than 8000x8000 px, and 2000x2000 px when a request
 * carries more than 20. Sides are read from each picture's header. The messages are those the API
 * records in its 400s: "Too much media: 0 document pages + 107 images > 100", "messages.7.content.2
 * .image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000
 * pixels", and "…exceed max allowed size for many-image requests: 2000 pixels".
 */
export async function anthropicRequestImageError(
  messages: ReadonlyArray<{ content: unknown }>,
): Promise<string | undefined> {
  const images = anthropicImagesIn(messages);
  if (images.length > 100) return `Too much media: 0 document pages + ${images.length} images > 100`;
  const many = images.length > 20;
  for (const image of images) {
    const meta = await sharp(Buffer.from(image.data, 'base64')).metadata();
    const side = Math.max(meta.width ?? 0, meta.height ?? 0);
    if (side > 8000) return `${image.where}: At least one of the image dimensions exceed max allowed size: 8000 pixels`;
    if (many && side > 2000)
      return `${image.where}: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels`;
  }
  return undefined;
}

/** Every image block of a Messages request, those inside tool results too, with its place in the body. */
function anthropicImagesIn(messages: ReadonlyArray<{ content: unknown }>): Array<{ where: string; data: string }> {
  const out: Array<{ where: string; data: string }> = [];
  const take = (block: Record<string, unknown>, where: string) => {
    const source = block.source as { data?: unknown } | undefined;
    if (block.type === 'image' && typeof source?.data === 'string')
      out.push({ where: `${where}.image.source.base64.data`, data: source.data });
  };
  for (const [i, m] of messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    for (const [j, block] of (m.content as Record<string, unknown>[]).entries()) {
      take(block, `messages.${i}.content.${j}`);
      if (block.type === 'tool_result' && Array.isArray(block.content))
        for (const [k, inner] of (block.content as Record<string, unknown>[]).entries())
          take(inner, `messages.${i}.content.${j}.content.${k}`);
    }
  }
  return out;
}
