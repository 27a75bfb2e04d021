import type { TurnError, TurnRequest } from './model-provider.ts';
import { type ErrorContext, toTurnError } from './provider-errors.ts';

/**
 * What an OpenAI failure says: an SDK error (`APIError`: status, code, param, message) or the
 * error of a Responses stream's `response.failed`.
 */
export type OpenAIFailure = { status?: unknown; code?: unknown; param?: unknown; message?: unknown };

/**
 * The codes of the Responses API's ResponseError that are about a picture (openai-node
 * `ResponseError.code`): what `response.failed` carries when the model could not take one.
 */
const imageCodes = new Set([
  'invalid_image',
  'invalid_image_format',
  'invalid_base64_image',
  'invalid_image_url',
  'image_too_large',
  'image_too_small',
  'image_parse_error',
  'image_content_policy_violation',
  'invalid_image_mode',
  'image_file_too_large',
  'unsupported_image_media_type',
  'empty_image_file',
]);

/**
 * How OpenAI refuses a picture, as recorded (400 invalid_request_error): "Invalid image." with no
 * param or code, for bytes it cannot read (github.com/ijwfly/chatgpt-tg/issues/14); "You uploaded an
 * unsupported image. Please make sure your image is below 20 MB in size and is of one the following
 * formats: […]" (github.com/CosmosShadow/gptpdf/issues/6; code invalid_image_format in
 * github.com/STranslate/STranslate/issues/277); "Invalid 'input[101].content[1].image_url'. Expected
 * a base64-encoded data URL …" (github.com/anomalyco/opencode/issues/23983), which names the part.
 */
const imageMessage = /\b(invalid|unsupported) image\b/i;

/** A part of the request body named by its place: `messages[3].content[0]…` or `input[5].output[1]…`. */
const placeOf = /\b(messages|input)\[(\d+)\]\.(content|output)\[(\d+)\]/;

type Part = Record<string, unknown>;

/**
 * Opens an OpenAI stream. A 400 that refuses one of the request's pictures comes back as the turn
 * error naming it (TurnError.refusedImage, so the runner drops it and tries once more); anything
 * else is thrown as it was.
 */
export async function openStream<T>(
  open: () => Promise<T>,
  body: Record<string, unknown>,
  request: TurnRequest,
  ctx: ErrorContext,
): Promise<{ stream: T } | { refused: TurnError }> {
  try {
    return { stream: await open() };
  } catch (error) {
    const failure = (typeof error === 'object' && error !== null ? error : {}) as OpenAIFailure;
    const refusedImage = failure.status === 400 ? refusedImageOf(failure, body, request) : undefined;
    if (refusedImage === undefined) throw error;
    return { refused: { ...toTurnError(error, ctx), retryable: false, refusedImage } };
  }
}

/**
 * Which of the request's pictures (counted from the first, as TurnError.refusedImage) the failure
 * refused, or undefined when it is not about a picture. The picture at the place the refusal names;
 * when it names none ("Invalid image."), the newest: the pictures before it went in requests the
 * API took, so the newest is the one it had not seen.
 */
export function refusedImageOf(
  failure: OpenAIFailure,
  body: Record<string, unknown>,
  request: TurnRequest,
): number | undefined {
  const message = typeof failure.message === 'string' ? failure.message : '';
  const param = typeof failure.param === 'string' ? failure.param : '';
  const place = placeOf.exec(param) ?? placeOf.exec(message);
  const aboutImage =
    imageCodes.has(String(failure.code)) || imageMessage.test(message) || /\.image_url\b/.test(`${param} ${message}`);
  if (!aboutImage) return undefined;
  const sent = imagePartsIn(body);
  const part = (place && partAt(body, place)) || sent.at(-1);
  const data = part && imageData(part);
  if (data === undefined) return undefined;
  const images = request.messages.flatMap((m) => (m.role === 'assistant' ? [] : (m.images ?? [])));
  const ordinal = images.findIndex((image) => image.data === data);
  return ordinal === -1 ? undefined : ordinal;
}

function partAt(body: Record<string, unknown>, place: RegExpExecArray): Part | undefined {
  const items = body[place[1] ?? ''];
  const item = Array.isArray(items) ? (items[Number(place[2])] as Part | undefined) : undefined;
  const parts = item?.[place[3] ?? ''];
  return Array.isArray(parts) ? (parts[Number(place[4])] as Part | undefined) : undefined;
}

/** The picture parts of a Chat Completions (`messages`) or Responses (`input`) body, in order. */
function imagePartsIn(body: Record<string, unknown>): Part[] {
  const items = (body.messages ?? body.input) as Part[] | undefined;
  if (!Array.isArray(items)) return [];
  return items.flatMap((item) => {
    const parts = Array.isArray(item.content) ? item.content : Array.isArray(item.output) ? item.output : [];
    return (parts as Part[]).filter((part) => imageData(part) !== undefined);
  });
}

/** The base64 of a picture part: `image_url.url` (Chat Completions) or `image_url` (Responses), a data URL. */
function imageData(part: Part): string | undefined {
  const url = part.type === 'image_url' ? (part.image_url as Part | undefined)?.url : part.image_url;
  if (typeof url !== 'string') return undefined;
  const at = url.indexOf(';base64,');
  return url.startsWith('data:') && at !== -1 ? url.slice(at + ';base64,'.length) : undefined;
}
