import { createHmac, randomUUID } from 'node:crypto';
import { getNamedType, isListType, isNonNullType, isObjectType, isScalarType, type GraphQLOutputType } from 'graphql';
import { linearSchema, type FakeIssue, type FakeLinear } from './fake-linear.ts';

export type LinearUser = { id: string; name: string; email: string };

/**
 * Checks a webhook payload against the schema's `*WebhookPayload` object type: every non-null
 * field present, no field the type lacks, scalars of the right kind. Our payloads are assembled
 * from the SDK's types and Linear's documented example, so this keeps them honest.
 */
export function checkPayloadShape(typeName: string, value: unknown): string[] {
  const type = linearSchema().getType(typeName);
  if (!type || !isObjectType(type)) return [`${typeName} is not an object type of the schema`];
  const problems: string[] = [];
  const walk = (t: GraphQLOutputType, v: unknown, path: string) => {
    if (isNonNullType(t)) {
      if (v === undefined || v === null) problems.push(`${path} is required`);
      else walk(t.ofType, v, path);
      return;
    }
    if (v === undefined || v === null) return;
    if (isListType(t)) {
      if (!Array.isArray(v)) problems.push(`${path} must be a list`);
      else for (const [i, item] of v.entries()) walk(t.ofType, item, `${path}[${i}]`);
      return;
    }
    const named = getNamedType(t);
    if (isScalarType(named)) {
      const expect: Record<string, string> = {
        String: 'string',
        Float: 'number',
        Int: 'number',
        Boolean: 'boolean',
        DateTime: 'string',
        JSONObject: 'object',
      };
      const want = expect[named.name];
      if (want && typeof v !== want) problems.push(`${path} must be a ${want}`);
      return;
    }
    if (isObjectType(named)) {
      if (typeof v !== 'object') return void problems.push(`${path} must be an object`);
      const fields = named.getFields();
      for (const key of Object.keys(v as object))
        if (!fields[key]) problems.push(`${path}.${key} is not a field of ${named.name}`);
      for (const [name, field] of Object.entries(fields))
        walk(field.type, (v as Record<string, unknown>)[name], `${path}.${name}`);
    }
  };
  walk(type, value, typeName);
  return problems;
}

function userPayload(user: LinearUser) {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    url: `https://linear.app/acme/profiles/${user.name.toLowerCase()}`,
  };
}

/** A comment in an issue's thread, by whom. */
export type ThreadComment = { id: string; body: string; user: LinearUser };

/**
 * `AgentSessionEvent` `created`, as Linear sends it when someone delegates an issue to the app or
 * mentions it. Shape: Linear's documented example and the schema's AgentSessionEventWebhookPayload
 * (checked here). A mention in a new top-level comment (`comment`): that comment is the session's
 * root comment. A mention in a reply (`thread`): `agentSession.comment` is the thread's ROOT comment
 * ("The root comment of the thread this agent session is attached to"), `previousComments` the
 * thread's comments before the mention ("Present only for created events where the session was
 * initiated by mentioning the agent in a child comment of a thread"). Either way the mention
 * itself arrives as the session's first `prompt` activity, `agentActivity`, linked to its comment
 * by `sourceCommentId`.
 */
export function agentSessionCreated(
  fake: FakeLinear,
  input: {
    agentSessionId: string;
    issue: FakeIssue;
    creator: LinearUser;
    comment?: { id: string; body: string };
    thread?: { root: ThreadComment; previous?: ThreadComment[]; mention: { id: string; body: string } };
    promptContext?: string;
    guidance?: string;
  },
) {
  const team = fake.teams.get(input.issue.teamId)!;
  fake.knowUser(input.creator);
  const now = new Date().toISOString();
  const root = input.thread
    ? {
        id: input.thread.root.id,
        body: input.thread.root.body,
        userId: input.thread.root.user.id,
        issueId: input.issue.id,
      }
    : input.comment && {
        id: input.comment.id,
        body: input.comment.body,
        userId: input.creator.id,
        issueId: input.issue.id,
      };
  const mention = input.thread?.mention ?? input.comment;
  const payload = {
    type: 'AgentSessionEvent',
    action: 'created',
    createdAt: now,
    organizationId: fake.organizationId,
    oauthClientId: 'f4ce0000-0000-4000-8000-0000000c1e17',
    appUserId: fake.appUserId,
    webhookId: 'b00c0000-0000-4000-8000-0000000000b1',
    webhookTimestamp: Date.now(),
    agentSession: {
      id: input.agentSessionId,
      status: 'pending',
      type: 'commentThread',
      appUserId: fake.appUserId,
      organizationId: fake.organizationId,
      issueId: input.issue.id,
      issue: {
        id: input.issue.id,
        identifier: input.issue.identifier,
        title: input.issue.title,
        ...(input.issue.description !== null && { description: input.issue.description }),
        url: `https://linear.app/acme/issue/${input.issue.identifier}`,
        teamId: team.id,
        team: { id: team.id, key: team.key, name: team.name },
      },
      ...(root && { commentId: root.id, comment: root }),
      creatorId: input.creator.id,
      creator: userPayload(input.creator),
      createdAt: now,
      updatedAt: now,
      archivedAt: null,
    },
    promptContext:
      input.promptContext ??
      `<issue identifier="${input.issue.identifier}">\n<title>${input.issue.title}</title>\n<description>${input.issue.description ?? ''}</description>\n<team name="${team.name}"/>\n</issue>`,
    ...(input.thread?.previous?.length && {
      previousComments: input.thread.previous.map((c) => ({
        id: c.id,
        body: c.body,
        userId: c.user.id,
        issueId: input.issue.id,
      })),
    }),
    ...(mention && {
      agentActivity: {
        id: randomUUID(),
        agentSessionId: input.agentSessionId,
        content: { type: 'prompt', body: mention.body },
        sourceCommentId: mention.id,
        signal: null,
        user: userPayload(input.creator),
        userId: input.creator.id,
        createdAt: now,
        updatedAt: now,
      },
    }),
    ...(input.guidance && {
      guidance: [
        {
          body: input.guidance,
          origin: {
            __typename: 'TeamOriginWebhookPayload',
            type: 'team',
            team: { id: team.id, key: team.key, name: team.name },
          },
        },
      ],
    }),
  };
  if (!fake.sessions.has(input.agentSessionId)) fake.addSession(input.agentSessionId, input.issue.id);
  assertShape(payload, 'guidance');
  return payload;
}

/** `AgentSessionEvent` `prompted`: a person wrote into the session (or answered its elicitation, or asked it to stop). */
export function agentSessionPrompted(
  fake: FakeLinear,
  input: {
    agentSessionId: string;
    issue: FakeIssue;
    user: LinearUser;
    body: string;
    signal?: 'stop';
    activityId?: string;
  },
) {
  const created = agentSessionCreated(fake, {
    agentSessionId: input.agentSessionId,
    issue: input.issue,
    creator: input.user,
  });
  const now = new Date().toISOString();
  const { promptContext: _p, ...base } = created;
  const payload = {
    ...base,
    action: 'prompted',
    agentSession: { ...created.agentSession, status: 'active' },
    agentActivity: {
      id: input.activityId ?? randomUUID(),
      agentSessionId: input.agentSessionId,
      content: { type: 'prompt', body: input.body },
      signal: input.signal ?? null,
      user: userPayload(input.user),
      userId: input.user.id,
      createdAt: now,
      updatedAt: now,
    },
  };
  assertShape(payload);
  return payload;
}

function assertShape(payload: Record<string, unknown>, ...skip: string[]) {
  // guidance's origin is a union in the schema, which this simple check does not walk.
  const checked = Object.fromEntries(Object.entries(payload).filter(([k]) => !skip.includes(k)));
  const problems = checkPayloadShape('AgentSessionEventWebhookPayload', checked);
  if (problems.length) throw new Error(`fake webhook payload does not fit Linear's schema: ${problems.join('; ')}`);
}

/**
 * Posts a webhook as Linear does: JSON body carrying `webhookTimestamp` (ms), `Linear-Signature` =
 * hex HMAC-SHA256 of the raw body under the webhook's signing secret, plus the delivery headers.
 */
export async function sendLinearWebhook(
  url: string,
  secret: string,
  payload: Record<string, unknown>,
  options: { timestamp?: number; signature?: string; deliveryId?: string } = {},
) {
  const body = JSON.stringify({ ...payload, webhookTimestamp: options.timestamp ?? Date.now() });
  const signature = options.signature ?? createHmac('sha256', secret).update(body).digest('hex');
  const deliveryId = options.deliveryId ?? randomUUID();
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'Linear-Webhook',
      'linear-delivery': deliveryId,
      'linear-event': String(payload.type),
      'linear-signature': signature,
    },
    body,
  });
  return { status: response.status, text: await response.text(), deliveryId };
}
