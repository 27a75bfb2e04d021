import { z } from 'zod';

const User = z.object({ id: z.string().min(1), name: z.string().min(1), email: z.string().optional() }).passthrough();

/** The fields of an `AgentSessionEvent` webhook Patchbay reads (see @linear/sdk's AgentSessionEventWebhookPayload). */
export const AgentSessionEvent = z
  .object({
    type: z.literal('AgentSessionEvent'),
    action: z.enum(['created', 'prompted']),
    organizationId: z.string().min(1),
    appUserId: z.string().min(1),
    webhookTimestamp: z.number(),
    agentSession: z
      .object({
        id: z.string().min(1),
        issueId: z.string().nullish(),
        issue: z
          .object({
            id: z.string().min(1),
            identifier: z.string().min(1),
            title: z.string(),
            description: z.string().nullish(),
            url: z.string(),
            teamId: z.string(),
            team: z.object({ id: z.string(), key: z.string(), name: z.string() }).passthrough(),
          })
          .passthrough()
          .nullish(),
        comment: z.object({ id: z.string(), body: z.string(), userId: z.string().nullish() }).passthrough().nullish(),
        creator: User.nullish(),
      })
      .passthrough(),
    agentActivity: z
      .object({
        id: z.string().min(1),
        content: z.object({ type: z.string(), body: z.string().optional() }).passthrough(),
        /** The comment the activity came from: on a `created` event, the comment that mentioned the agent. */
        sourceCommentId: z.string().nullish(),
        signal: z.string().nullish(),
        user: User.nullish(),
        userId: z.string().nullish(),
      })
      .passthrough()
      .nullish(),
    promptContext: z.string().nullish(),
    previousComments: z
      .array(z.object({ id: z.string().optional(), body: z.string(), userId: z.string().nullish() }).passthrough())
      .nullish(),
    guidance: z.array(z.object({ body: z.string() }).passthrough()).nullish(),
  })
  .passthrough();
export type AgentSessionEvent = z.infer<typeof AgentSessionEvent>;

/**
 * The key a delivery is stored and deduplicated under: what it means, not the delivery's own id, so
 * a redelivery (a new `Linear-Delivery` for the same event) is still recognised. An agent session
 * is created once; a prompt is one agent activity. Other events fall back to the delivery id.
 */
export function dedupeKeyOf(payload: unknown, deliveryId: string | undefined): string | undefined {
  const p = payload as {
    type?: unknown;
    action?: unknown;
    agentSession?: { id?: unknown };
    agentActivity?: { id?: unknown };
    webhookId?: unknown;
    webhookTimestamp?: unknown;
  };
  if (p?.type === 'AgentSessionEvent') {
    if (p.action === 'created' && typeof p.agentSession?.id === 'string')
      return `agent-session:${p.agentSession.id}:created`;
    if (p.action === 'prompted' && typeof p.agentActivity?.id === 'string')
      return `agent-activity:${p.agentActivity.id}`;
  }
  if (deliveryId) return `delivery:${deliveryId}`;
  if (typeof p?.webhookId === 'string' && typeof p.webhookTimestamp === 'number')
    return `webhook:${p.webhookId}:${p.webhookTimestamp}`;
  return undefined;
}
