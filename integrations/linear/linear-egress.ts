import type { Actor } from '../../src/core/actor.ts';
import { egressAllowNotice, parseEgressAllowReply } from '../../src/core/egress-allow.ts';
import { describeEgressBlock } from '../../src/core/egress-block.ts';
import type { EventOf } from '../../src/core/events.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { Activity } from './linear-api.ts';

/**
 * Blocked connections in a Linear agent session: a host the allowlist refused is a
 * thought saying how to allow it (a prompt `allow <host> for this session|repository`, read by
 * egressPrompt); an allowance is a thought saying who allowed what. A refused address says nothing
 * to allow: it can never be allowed from a thread.
 */
export function egressActivity(event: EventOf<'egress-blocked'> | EventOf<'egress-allowed'>): Activity | undefined {
  if (event.type === 'egress-allowed') return { content: { type: 'thought', body: `${egressAllowNotice(event)}.` } };
  if (event.reason !== 'not-allowed') return undefined;
  const host = event.host;
  const body = `The sandbox was refused ${describeEgressBlock(event)}. If the work needs it, reply \`allow ${host}:${event.port} for this session\` or \`allow ${host}:${event.port} for this repository\`.`;
  return { content: { type: 'thought', body } };
}

/** A prompt `allow <host> for this session|repository`, as the service's inbound (the requester only may). */
export function egressPrompt(input: {
  thread: ThreadRef;
  actor: Actor;
  body: string;
  dedupeKey: string;
}): Inbound | undefined {
  const reply = parseEgressAllowReply(input.body);
  if (!reply) return undefined;
  const { thread, actor, dedupeKey } = input;
  return { kind: 'egress-allow', thread, actor, ...reply, dedupeKey };
}
