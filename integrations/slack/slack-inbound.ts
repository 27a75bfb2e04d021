import { createHash } from 'node:crypto';
import type { WebClient } from '@slack/web-api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { IntegrationContext } from '../integration-module.ts';
import type { Actor } from '../../src/core/actor.ts';
import type {
  DeliveryInbox,
  InboundSurface,
  Normalized,
  ReceivedDelivery,
  StoredDelivery,
} from '../../src/core/inbound-surface.ts';
import { chooseCandidate, findRepoMentions, recommendRepo, type RepoMention } from './repo-mention.ts';
import type { ActorDirectory } from './slack-actors.ts';
import { ASK_FOR_REPO, candidatesMessage, parseAnswerValue, type SlackText } from './slack-blocks.ts';
import { classifyEvent, cleanText, isStopCommand, plainText, threadOf } from './slack-normalize.ts';
import {
  BlockActions,
  EventCallback,
  messageEventOf,
  parseSlackPayload,
  type SlackMessageEvent,
  type SlackPayload,
} from './slack-payloads.ts';
import { MAX_SKEW_SECONDS, verifySlackSignature } from './slack-signature.ts';
import { foreignTeamText, type SlackTeams, teamAllowed, userTeamOf } from './slack-teams.ts';
import type { PendingTask, SlackStore, SlackThread } from './slack-store.ts';

export type SlackWeb = Pick<WebClient, 'chat' | 'reactions' | 'users'>;

/** "connect github", said to the bot: the person gets a private sign-in link. */
const CONNECT_GITHUB = /^(connect|link)\s+(my\s+)?github( account)?[.!]?$/i;

/**
 * What a Slack payload means, for dedupe: a person's message (channel and ts, so the `message` and
 * `app_mention` events Slack sends for one message count once), another event by its event_id, a
 * button click by its message, time and user; anything else by the body's hash. Slack's retries
 * and a signed body replayed within the signature window have the same key.
 */
export function slackDelivery(body: Record<string, unknown>, raw: string, deliveryId?: string): ReceivedDelivery {
  const kind = typeof body.type === 'string' ? body.type : 'unknown';
  const base = { source: 'slack', kind, body: raw, ...(deliveryId && { deliveryId }) };
  const envelope = kind === 'event_callback' ? EventCallback.safeParse(body) : undefined;
  if (envelope?.success) {
    const message = messageEventOf(envelope.data);
    if (message && 'event' in message) {
      // One thread's messages in the order they came (a request, then "stop").
      const { channel, ts, thread_ts: threadTs = ts } = message.event;
      return { ...base, dedupeKey: `msg:${channel}:${ts}`, orderKey: `thread:${channel}:${threadTs}` };
    }
    if (envelope.data.event_id) return { ...base, dedupeKey: `event:${envelope.data.event_id}` };
  }
  const click = kind === 'block_actions' ? BlockActions.safeParse(body) : undefined;
  if (click?.success) {
    const { container, message, user } = click.data;
    const action = click.data.actions?.[0];
    const channel = click.data.channel?.id ?? container?.channel_id;
    const threadTs = message?.thread_ts ?? message?.ts ?? container?.message_ts;
    const orderKey = channel && threadTs ? { orderKey: `thread:${channel}:${threadTs}` } : {};
    if (container?.message_ts && action?.action_ts)
      return { ...base, ...orderKey, dedupeKey: `action:${container.message_ts}:${action.action_ts}:${user.id}` };
  }
  return { ...base, dedupeKey: `body:${createHash('sha256').update(raw).digest('hex')}` };
}

/**
 * The most a Slack request body may be. Slack documents no maximum for Events API or
 * interactivity requests; this is Bolt's own receiver limit, far above any real event.
 */
export const SLACK_REQUEST_MAX_BYTES = 4 * 1024 * 1024;

/**
 * POST /slack/events (events and interactivity) in Patchbay's one Fastify server: verifies Slack's
 * signature on the raw body (401 otherwise), answers url_verification and ssl_check itself, stores
 * everything else in the inbound pipeline, and acknowledges once it is stored. The work happens
 * after the ack, from the pipeline's queue (see SlackSurface), so a crash after the ack loses nothing.
 */
export function slackRoutes(options: {
  signingSecret: string;
  inbox: DeliveryInbox;
  log: Logger;
  path?: string;
  nowSeconds?: () => number;
}) {
  const { log, inbox } = options;
  const nowSeconds = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  let mismatches = 0;

  return async function routes(fastify: FastifyInstance): Promise<void> {
    // Raw strings, in this scope only: the signature covers the exact bytes Slack sent. Any content
    // type, so a request that is not Slack's meets the signature check (401), not a 415.
    fastify.removeAllContentTypeParsers();
    fastify.addContentTypeParser('*', { parseAs: 'string', bodyLimit: SLACK_REQUEST_MAX_BYTES }, (_req, body, done) =>
      done(null, body),
    );
    // Missing or stale signing headers are refused before the body is read (the HMAC needs it all).
    const signedAndFresh = async (request: FastifyRequest, reply: FastifyReply) => {
      const timestamp = header(request.headers['x-slack-request-timestamp']);
      const signature = header(request.headers['x-slack-signature']);
      if (!timestamp || !/^\d+$/.test(timestamp) || !/^v0=[0-9a-f]{64}$/.test(signature ?? '')) {
        return reply.code(401).header('connection', 'close').send({ error: 'invalid_signature', reason: 'missing' });
      }
      if (Math.abs(nowSeconds() - Number(timestamp)) > MAX_SKEW_SECONDS)
        return reply.code(401).header('connection', 'close').send({ error: 'invalid_signature', reason: 'stale' });
    };
    fastify.post(
      options.path ?? '/slack/events',
      { config: { public: true }, onRequest: signedAndFresh },
      async (request, reply) => {
        const rawBody = typeof request.body === 'string' ? request.body : '';
        const check = verifySlackSignature({
          signingSecret: options.signingSecret,
          timestamp: header(request.headers['x-slack-request-timestamp']),
          signature: header(request.headers['x-slack-signature']),
          rawBody,
          nowSeconds: nowSeconds(),
        });
        if (!check.ok) {
          if (check.reason === 'mismatch' && mismatches++ % 100 === 0) {
            log.warn(
              "a Slack request failed signature verification: check SLACK_SIGNING_SECRET against the app's Basic Information page",
            );
          }
          return reply.code(401).send({ error: 'invalid_signature', reason: check.reason });
        }
        const parsed = parseBody(rawBody, request.headers['content-type'] ?? '');
        if (!parsed) {
          // Signed by Slack yet unreadable: a retry would carry the same bytes, so take it and say so.
          log.warn(
            {
              contentType: request.headers['content-type'],
              bytes: rawBody.length,
              retryNum: header(request.headers['x-slack-retry-num']),
            },
            'a signed Slack request body could not be read; acknowledged and dropped',
          );
          return reply.code(200).send();
        }
        const { body, json } = parsed;
        if (body.ssl_check) return reply.code(200).send();
        if (body.type === 'url_verification') return reply.code(200).send({ challenge: body.challenge });
        // Stored as the JSON payload (interactivity's form field unwrapped), which is what the surface reads.
        await inbox.accept(slackDelivery(body, json));
        return reply.code(200).send();
      },
    );
  };
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Events are JSON; interactivity is a form with the JSON in `payload`. */
function parseBody(raw: string, contentType: string): { body: Record<string, unknown>; json: string } | undefined {
  try {
    const json = contentType.startsWith('application/x-www-form-urlencoded')
      ? new URLSearchParams(raw).get('payload')
      : raw;
    if (!json) return undefined;
    const parsed: unknown = JSON.parse(json);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? { body: parsed as Record<string, unknown>, json }
      : undefined;
  } catch {
    return undefined;
  }
}

export type SlackInboundDeps = {
  context: Pick<IntegrationContext, 'findSession' | 'sessionEvents'>;
  store: SlackStore;
  web: SlackWeb;
  actors: ActorDirectory;
  log: Logger;
  botUserId: string;
  /** The session's repo string for a GitHub repository (its clone URL). */
  repoUrlFor: (owner: string, repo: string) => string;
  /** Hosts whose repository links count in a message (github.com by default). */
  repoHosts?: readonly string[];
  /** A GitHub sign-in link bound to a person, when GitHub sign-in is configured. */
  signInLink?: (actor: Actor) => string;
  /** The installing workspace and the other organisations allowed in (Slack Connect). */
  teams?: SlackTeams;
};

export type SlackInbound = ReturnType<typeof createSlackInbound>;

type SlackAction = {
  teamId: string;
  channel: string;
  messageTs: string;
  threadTs?: string;
  user: string;
  userTeam?: string;
  actionId: string;
  value: string;
};

const ignore = (reason: string): Normalized => ({ kind: 'ignore', reason });

/**
 * What Patchbay makes of a stored Slack event once it was acknowledged: a session start, a thread
 * reply, an answer or a stop for the thread's session, or a question back (which repository?) with
 * no session yet. Everything here is safe to repeat: the pipeline retries a delivery that throws.
 */
export function createSlackInbound(deps: SlackInboundDeps) {
  const { context, store, web, actors } = deps;

  async function post(thread: SlackThread, message: SlackText): Promise<void> {
    await web.chat.postMessage({
      channel: thread.channel,
      thread_ts: thread.threadTs,
      text: message.text,
      ...(message.blocks && { blocks: message.blocks as never }),
      unfurl_links: false,
    });
  }

  function start(
    thread: SlackThread,
    actor: Actor,
    text: string,
    repo: RepoMention,
    after?: () => Promise<void>,
  ): Normalized {
    return {
      kind: 'inbound',
      inbound: {
        kind: 'start',
        thread,
        actor,
        text: plainText(text),
        repo: deps.repoUrlFor(repo.owner, repo.repo),
        ...(repo.baseBranch && { baseBranch: repo.baseBranch }),
      },
      ...(after && { after }),
    };
  }

  /** Decides on a request whose repository is still open: none named, one, or several to choose from. */
  async function routeRequest(
    thread: SlackThread,
    actor: Actor,
    task: string,
    repos: RepoMention[],
  ): Promise<Normalized> {
    if (repos.length === 1) return start(thread, actor, task, repos[0]!);
    if (repos.length === 0) {
      await store.savePending({ thread, text: task, actor, candidates: null });
      await post(thread, { text: ASK_FOR_REPO });
      return ignore('asked for the repository');
    }
    await store.savePending({ thread, text: task, actor, candidates: repos });
    const { pick, why } = recommendRepo(task, repos);
    await post(thread, candidatesMessage(repos, pick, why, deps.repoUrlFor));
    return ignore('offered the repositories named to choose from');
  }

  /** A reply in a thread whose task waits for its repository. */
  async function resolvePending(pending: PendingTask, from: Actor, text: string): Promise<Normalized> {
    const named = findRepoMentions(text, deps.repoHosts);
    const chosen = pending.candidates
      ? (chooseCandidate(text, pending.candidates) ?? (named.length === 1 ? named[0] : undefined))
      : undefined;
    if (chosen || (!pending.candidates && named.length === 1)) {
      // The pending task is taken once the session exists, so a retry after a failed start still finds it.
      return start(
        pending.thread,
        pending.actor,
        pending.text || text,
        chosen ?? named[0]!,
        async () => void (await store.takePending(pending.thread)),
      );
    }
    if (named.length > 1) return routeRequest(pending.thread, pending.actor, pending.text || text, named);
    // Chatter from others in the thread is not addressed to us; the requester gets the question again.
    if (from.id !== pending.actor.id) return ignore('a reply from someone else in a thread waiting for its repository');
    if (pending.candidates) {
      const { pick, why } = recommendRepo(pending.text, pending.candidates);
      await post(pending.thread, candidatesMessage(pending.candidates, pick, why, deps.repoUrlFor));
    } else {
      await post(pending.thread, { text: ASK_FOR_REPO });
    }
    return ignore('asked for the repository again');
  }

  /**
   * The link is bound to the person who asked, so it goes to them alone (ephemeral): whoever opens
   * it attaches their GitHub account to that person, and pull requests they ask for open as them.
   */
  async function connectGitHub(event: SlackMessageEvent, thread: SlackThread): Promise<Normalized> {
    const user = event.user!;
    const text = deps.signInLink
      ? `Connect your GitHub account so the pull requests you ask for open under your name (the link works for an hour): ${deps.signInLink(await actors.get(user))}`
      : 'GitHub sign-in is not set up on this Patchbay (GITHUB_OAUTH_CLIENT_ID, GITHUB_OAUTH_CLIENT_SECRET and PATCHBAY_SECRET_KEY, and Sign in with Slack: SLACK_CLIENT_ID and SLACK_CLIENT_SECRET); pull requests open as the Patchbay app.';
    await web.chat.postEphemeral({
      channel: thread.channel,
      user,
      text,
      ...(event.thread_ts && { thread_ts: event.thread_ts }),
    });
    return ignore('sent a GitHub sign-in link');
  }

  /** Slack Connect: a person of another organisation is told, privately, and nothing else happens. */
  async function refuseForeign(
    channel: string,
    user: string,
    userTeam: string,
    threadTs: string | undefined,
  ): Promise<Normalized> {
    deps.log.info({ userTeam, user }, 'Slack request from another organisation refused (not in SLACK_ALLOWED_TEAMS)');
    await web.chat.postEphemeral({
      channel,
      user,
      text: foreignTeamText(userTeam),
      ...(threadTs && { thread_ts: threadTs }),
    });
    return ignore(`from team ${userTeam}, which is not this workspace nor in SLACK_ALLOWED_TEAMS`);
  }

  /** A message in a thread that has a session: steer it, answer its open question, or stop it. */
  function toSession(
    thread: SlackThread,
    actor: Actor,
    text: string,
    session: { pendingQuestion: { questionId: string } | null; status: string },
  ): Normalized {
    if (isStopCommand(text)) {
      return {
        kind: 'inbound',
        inbound: { kind: 'stop', thread, actor },
        async after(outcome) {
          if (outcome.kind === 'not-running')
            await post(thread, { text: `Nothing is running here (the session is ${outcome.session.status}).` });
        },
      };
    }
    const question = session.status === 'waiting' ? session.pendingQuestion : null;
    return {
      kind: 'inbound',
      inbound: question
        ? { kind: 'answer', thread, actor, questionId: question.questionId, text: plainText(text) }
        : { kind: 'message', thread, actor, text: plainText(text) },
    };
  }

  return {
    /** An app_mention or a message event (DMs, thread replies). */
    async onMessage(teamId: string, received: SlackMessageEvent, attempt = 1): Promise<Normalized> {
      // A message that mentions the bot is a mention, whichever of its two events (message,
      // app_mention) arrived first: the pipeline keeps one per message.
      const event =
        received.type === 'message' && received.text?.includes(`<@${deps.botUserId}>`)
          ? { ...received, type: 'app_mention' }
          : received;
      const kind = classifyEvent(event);
      if (kind === 'ignore')
        return ignore('not a person writing to Patchbay (a bot, an edit, or a channel message without a mention)');
      if (event.user === deps.botUserId) return ignore('its own message');
      const thread = threadOf(teamId, event);
      const text = cleanText(event.text, deps.botUserId);
      const session = await context.findSession(thread);
      const pending = !session && kind === 'thread-reply' ? await store.pending(thread) : undefined;
      // Replies in threads that are not ours are not addressed to us (unless they mention us).
      if (!session && !pending && kind === 'thread-reply' && event.type !== 'app_mention')
        return ignore('a reply in a thread that is not a session');
      // Addressed to Patchbay: from this workspace (or an allowed organisation), or refused.
      const userTeam = userTeamOf(event);
      if (deps.teams && !teamAllowed(deps.teams, userTeam))
        return refuseForeign(event.channel, event.user!, userTeam!, event.thread_ts);
      if (session || pending) {
        if (!text) return ignore('an empty message');
        const actor = await actors.get(event.user!);
        if (session) return toSession(thread, actor, text, session);
        return resolvePending(pending!, actor, text);
      }
      if (CONNECT_GITHUB.test(text)) return connectGitHub(event, thread);
      // The 👀 goes on with the first attempt only: a retry would find it there already.
      if (attempt === 1) {
        await web.reactions
          .add({ channel: event.channel, timestamp: event.ts, name: 'eyes' })
          .catch((error: unknown) => deps.log.warn({ err: error }, 'could not add the 👀 reaction'));
      }
      const actor = await actors.get(event.user!);
      return routeRequest(thread, actor, text, findRepoMentions(text, deps.repoHosts));
    },

    /** A button click on one of our messages. */
    async onAction(input: SlackAction): Promise<Normalized> {
      if (deps.teams && !teamAllowed(deps.teams, input.userTeam))
        return refuseForeign(input.channel, input.user, input.userTeam!, input.threadTs);
      const thread: SlackThread = {
        source: 'slack',
        teamId: input.teamId,
        channel: input.channel,
        threadTs: input.threadTs ?? input.messageTs,
      };
      const actor = await actors.get(input.user);
      if (input.actionId.startsWith('patchbay_stop'))
        return { kind: 'inbound', inbound: { kind: 'stop', thread, actor } };
      if (input.actionId.startsWith('patchbay_answer')) {
        const picked = parseAnswerValue(input.value);
        const session = picked && (await context.findSession(thread));
        const choice = session && (await questionChoices(context, session.id, picked.q))?.[picked.i];
        if (!picked || choice === undefined) return ignore('a choice button that names no known question or choice');
        return { kind: 'inbound', inbound: { kind: 'answer', thread, actor, questionId: picked.q, text: choice } };
      }
      if (input.actionId.startsWith('patchbay_pick_repo')) {
        const pending = await store.pending(thread);
        const repo = pending?.candidates?.[Number(input.value)];
        if (!pending || !repo) return ignore('the repository choice is no longer open');
        return start(thread, pending.actor, pending.text, repo, async () => void (await store.takePending(thread)));
      }
      return ignore(`unknown action ${input.actionId}`);
    },
  };
}

/**
 * Slack's inbound half for the pipeline: reads a stored event or button click and hands it to the
 * inbound logic above. `inbound` is undefined until the module started (it needs the bot's user
 * id); a delivery worked before that is retried.
 */
export function createSlackSurface(deps: { inbound: () => SlackInbound | undefined; web: SlackWeb }): InboundSurface {
  const threadOfDelivery = (payload: SlackPayload): SlackThread | undefined => {
    if (payload.kind === 'event') {
      const message = messageEventOf(payload.body);
      return message && 'event' in message
        ? threadOf(payload.body.team_id ?? message.event.team ?? 'unknown', message.event)
        : undefined;
    }
    if (payload.kind === 'click') {
      const body = payload.body;
      const channel = body.channel?.id ?? body.container?.channel_id;
      const ts = body.message?.thread_ts ?? body.message?.ts ?? body.container?.message_ts;
      if (channel && ts) return { source: 'slack', teamId: body.team?.id ?? 'unknown', channel, threadTs: ts };
    }
    return undefined;
  };

  return {
    source: 'slack',
    async interpret(delivery: StoredDelivery): Promise<Normalized> {
      const inbound = deps.inbound();
      if (!inbound) throw new Error('the Slack integration has not connected yet');
      const payload = parseSlackPayload(delivery.body);
      if (payload.kind === 'invalid') return ignore(payload.problem);
      if (payload.kind === 'event') {
        const { event, team_id } = payload.body;
        const message = messageEventOf(payload.body);
        if (!message) return ignore(`event ${event?.type ?? 'without a type'} is not one Patchbay handles`);
        if ('problem' in message) return ignore(message.problem);
        return inbound.onMessage(team_id ?? message.event.team ?? 'unknown', message.event, delivery.attempt);
      }
      if (payload.kind === 'click') {
        const click = payload.body;
        const action = click.actions?.[0];
        const channel = click.channel?.id ?? click.container?.channel_id;
        const messageTs = click.message?.ts ?? click.container?.message_ts;
        if (action?.type !== 'button' || !action.action_id?.startsWith('patchbay_') || !channel || !messageTs)
          return ignore('not a Patchbay button');
        return inbound.onAction({
          teamId: click.team?.id ?? click.user.team_id ?? 'unknown',
          channel,
          messageTs,
          ...(click.message?.thread_ts && { threadTs: click.message.thread_ts }),
          user: click.user.id,
          ...(click.user.team_id && { userTeam: click.user.team_id }),
          actionId: action.action_id,
          value: action.value ?? '',
        });
      }
      return ignore(`payload type ${payload.type} is not one Patchbay handles`);
    },
    async tellFailure(delivery, reason) {
      const thread = threadOfDelivery(parseSlackPayload(delivery.body));
      if (!thread) return;
      await deps.web.chat.postMessage({
        channel: thread.channel,
        thread_ts: thread.threadTs,
        text: `Sorry, I could not process this message: ${reason}`,
        unfurl_links: false,
      });
    },
  };
}

/** The choices the agent offered with a question, from the session's log. */
async function questionChoices(
  context: Pick<IntegrationContext, 'sessionEvents'>,
  sessionId: string,
  questionId: string,
): Promise<string[] | undefined> {
  for (const { event } of await context.sessionEvents(sessionId, ['question-asked'])) {
    if (event.type === 'question-asked' && event.questionId === questionId) return event.choices;
  }
  return undefined;
}
