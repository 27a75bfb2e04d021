import type { Chaos } from './chaos.ts';
import { networkFault } from './chaos-faults.ts';
import type { AnthropicReply } from './fake-anthropic.ts';
import type { OpenAIReply } from './fake-openai.ts';

/**
 * The model APIs' transient faults under chaos (chaos.ts): the script's answer, or in its place a
 * 429 with Retry-After or an overload, or the answer itself cut before its closing event or broken
 * by an error event after its first block; or else the network's faults (chaos-faults.ts): the
 * answer held back 1 to 2 s, or the connection dropped before any of it. Stream faults apply to
 * streamed answers only.
 */
const statusFaults = ['rate-limited', 'overloaded'] as const;
const streamFaults = ['stream-cut', 'error-event'] as const;

/** Anthropic: 429 rate_limit_error and 529 overloaded_error (both with retry-after), a network or a stream fault. */
export async function anthropicChaos(
  chaos: Chaos | undefined,
  reply: AnthropicReply,
  streamed: boolean,
  subject?: string,
): Promise<AnthropicReply> {
  if (!chaos) return reply;
  const message = reply.kind === undefined || reply.kind === 'message';
  const kinds = [...statusFaults, ...(message && streamed ? streamFaults : [])];
  const kind = chaos.roll('anthropic', 'messages', kinds, subject);
  if (!kind && (await networkFault(chaos, 'anthropic', 'messages', subject))) return { kind: 'drop' };
  if (kind === 'rate-limited')
    return {
      kind: 'error',
      status: 429,
      type: 'rate_limit_error',
      message: 'Number of requests has exceeded your per-minute rate limit',
      headers: { 'retry-after': '1' },
    };
  if (kind === 'overloaded')
    return {
      kind: 'error',
      status: 529,
      type: 'overloaded_error',
      message: 'Overloaded',
      headers: { 'retry-after': '1' },
    };
  if (reply.kind === 'error' || reply.kind === 'drop' || reply.kind === 'hang' || reply.kind === 'recorded')
    return reply;
  if (kind === 'stream-cut') return { ...reply, fault: 'cut' };
  if (kind === 'error-event') return { ...reply, midStreamError: 'overloaded_error' };
  return reply;
}

/** OpenAI (Responses and Chat Completions stream): 429 with retry-after, 503 overloaded, a network or a stream fault. */
export async function openaiChaos(
  chaos: Chaos | undefined,
  reply: OpenAIReply,
  endpoint: string,
): Promise<OpenAIReply> {
  if (!chaos) return reply;
  const answer = reply.kind === undefined || reply.kind === 'reply';
  const kind = chaos.roll('openai', endpoint, [...statusFaults, ...(answer ? streamFaults : [])]);
  if (!kind && (await networkFault(chaos, 'openai', endpoint))) return { kind: 'drop' };
  if (kind === 'rate-limited')
    return {
      kind: 'error',
      status: 429,
      type: 'requests',
      code: 'rate_limit_exceeded',
      message: 'Rate limit reached for requests. Please try again in 1s.',
      headers: { 'retry-after': '1' },
    };
  if (kind === 'overloaded')
    return {
      kind: 'error',
      status: 503,
      type: 'server_error',
      message: 'The engine is currently overloaded, please try again later',
      headers: { 'retry-after': '1' },
    };
  if (reply.kind === 'error' || reply.kind === 'drop' || reply.kind === 'hang' || reply.kind === 'recorded')
    return reply;
  if (kind === 'stream-cut') return { ...reply, fault: 'cut' };
  if (kind === 'error-event') return { ...reply, midStreamError: 'server_error' };
  return reply;
}
