/**
 * What the model APIs refuse in an image they are sent, as the fakes enforce it: a format other
 * than PNG, JPEG, GIF or WebP, bytes that are not the format the request names, and sizes over the
 * documented caps (Anthropic: 5 MB per image counted as base64 text, 8000 px a side; OpenAI: 20 MB per image).
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

/** Why an OpenAI image_url (a data URL here: Patchbay never sends remote URLs) is refused. */
export function dataUrlError(url: unknown, where: string): string | undefined {
  const match = typeof url === 'string' ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
  if (!match) return `Invalid '${where}'. Expected a base64-encoded data URL with an image MIME type.`;
  return imageError(match[1], match[2], openaiMaxImageBytes, where);
}
