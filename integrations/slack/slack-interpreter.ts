import type { Logger } from 'pino';
import type { Actor } from '../../src/core/actor.ts';
import type { InboundOutcome } from '../../src/core/inbound.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { DeliveryInterpreter, Interpretation, StoredDelivery } from '../../src/core/delivery-interpreter.ts';
import { findRepoMentions, type RepoMention } from '../../src/core/repo-mentions.ts';
import type { IntegrationContext } from '../integration-module.ts';
import { allReposTask, chooseCandidate, recommendRepo } from './repo-choice.ts';
import { approvalClick, approvalReply } from './slack-approvals.ts';
import { egressClick, egressReply } from './slack-egress.ts';
import type { ActorDirectory } from './slack-actors.ts';
import { ASK_FOR_REPO, candidatesMessage, PICK_ALL_REPOS, parseAnswerValue } from './slack-blocks.ts';
import type { SlackPoster } from './slack-post-once.ts';
import { say, tellFailure } from './slack-interpreter-posts.ts';
import { CONNECT_GITHUB, connectGitHub, refuseForeign } from './slack-ephemeral.ts';
import { type SlackFileDeps, withSlackFiles } from './slack-files.ts';
import type { SlackIdentity } from './slack-identity.ts';
import { classifyEvent, cleanText, isStopCommand, plainText, threadOf } from './slack-text.ts';
import { messageEventOf, parseSlackPayload, type SlackMessageEvent, stopEventOf } from './slack-payloads.ts';
import { nativeStop, questionChoices } from './slack-native-stop.ts';
import type { PendingTask, SlackStore, SlackThread } from './slack-store.ts';
import { teamAllowed, userTeamOf } from './slack-teams.ts';
import type { SlackWeb } from './slack-web.ts';
import { openApprovalId } from '../../src/core/relayed-approval.ts';

/**
 * What the Slack interpreter does once the session service handled a request (its reply step), as
 * data: a start from a task that waited for its repository takes that task; a stop that found
 * nothing running says so in the thread.
 */
export type SlackErrand =
  | { kind: 'take-pending'; thread: SlackThread }
  /** `key`: the stop it answers, so the reply is posted once for it (postRecorded). */
  | { kind: 'say-not-running'; thread: SlackThread; key: string }
  /** An approval decision or an allowed host: when the service refused it, the person is told why, privately. */
  | { kind: 'say-refused'; thread: SlackThread; user: string };

/** What the requests logic works with: the session service's lookups, Slack's tables and API, the bot's identity. */
export type SlackRequestDeps = {
  context: Pick<IntegrationContext, 'sessions'>;
  store: SlackStore;
  web: SlackWeb;
  /** Posts with no SDK retries, once per key (postRecorded); `web` when absent. */
  poster?: SlackPoster;
  actors: ActorDirectory;
  log: Logger;
  /** The bot's user id and home workspace, learned at start. */
  identity: SlackIdentity;
  /** The session's repo string for a GitHub repository (its clone URL). */
  repoUrlFor: (owner: string, repo: string) => string;
  /** Hosts whose repository links count in a message (github.com by default). */
  repoHosts?: readonly string[];
  /** A GitHub sign-in link bound to a person, when GitHub sign-in is configured. */
  signInLink?: (actor: Actor) => string;
};

/** A click on one of Patchbay's buttons, as the interpreter read it from the payload. */
export type SlackAction = {
  teamId: string;
  channel: string;
  messageTs: string;
  threadTs?: string;
  user: string;
  userTeam?: string;
  actionId: string;
  value: string;
};

type Interpreted = Interpretation<SlackErrand>;

const ignore = (reason: string): Interpreted => ({ kind: 'ignore', reason });

/** The requests logic it hands deliveries to, and what its reply step posts and takes with. */
export type SlackSurfaceDeps = {
  requests: SlackRequests;
  web: SlackWeb;
  /** Posts with no SDK retries, once per key (postRecorded); `web` when absent. */
  poster?: SlackPoster;
  store: Pick<SlackStore, 'takePending' | 'intendPost' | 'recordPost' | 'withdrawPost'>;
  log: Logger;
  /** Takes the pictures shared with a message in; without it they are left out. */
  files?: SlackFileDeps;
};

/**
 * Slack's side of the inbound pipeline: reads a stored event or button click and hands it to the
 * requests logic (SlackRequests), replies once the session service handled what came of it, and
 * tells the thread when a delivery could not be processed at all.
 */
export function createSlackInterpreter(deps: SlackSurfaceDeps): DeliveryInterpreter<SlackErrand> {
  return {
    source: 'slack',
    interpret: (delivery, signal) => interpret(deps, delivery, signal),
    reply: (errand, outcome) => reply(deps, errand, outcome),
    tellFailure: (delivery, reason) => tellFailure(deps, delivery, reason),
  };
}

/** A stored Slack body as a message or a click for the requests logic, or why it is ignored. */
async function interpret(
  deps: Pick<SlackSurfaceDeps, 'requests' | 'files'>,
  delivery: StoredDelivery,
  signal: AbortSignal,
): Promise<Interpretation<SlackErrand>> {
  const { requests } = deps;
  const payload = parseSlackPayload(delivery.body);
  if (payload.kind === 'invalid') return ignore(payload.problem);
  if (payload.kind === 'event') {
    const { event, team_id } = payload.body;
    const stop = stopEventOf(payload.body);
    if (stop)
      return 'problem' in stop ? ignore(stop.problem) : nativeStop(requests.deps, team_id ?? 'unknown', stop.event);
    const message = messageEventOf(payload.body);
    if (!message) return ignore(`event ${event?.type ?? 'without a type'} is not one Patchbay handles`);
    if ('problem' in message) return ignore(message.problem);
    const teamId = team_id ?? message.event.team ?? 'unknown';
    const interpreted = await requests.onMessage(teamId, message.event, delivery.attempt);
    return withSlackFiles(deps.files, teamId, message.event, interpreted, { signal });
  }
  if (payload.kind === 'click') {
    const click = payload.body;
    const action = click.actions?.[0];
    const channel = click.channel?.id ?? click.container?.channel_id;
    const messageTs = click.message?.ts ?? click.container?.message_ts;
    if (action?.type !== 'button' || !action.action_id?.startsWith('patchbay_') || !channel || !messageTs)
      return ignore('not a Patchbay button');
    return requests.onAction({
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
}

/** The session service handled the request: do what its errand says. Safe to repeat. */
async function reply(
  deps: Pick<SlackSurfaceDeps, 'web' | 'poster' | 'store' | 'log'>,
  errand: SlackErrand,
  outcome: InboundOutcome,
): Promise<void> {
  switch (errand.kind) {
    case 'take-pending':
      await deps.store.takePending(errand.thread);
      return;
    case 'say-not-running':
      if (outcome.kind === 'not-running')
        await say(deps, errand.thread, errand.key, {
          text: `Nothing is running here (the session is ${outcome.session.status}).`,
        });
      return;
    case 'say-refused':
      if (outcome.kind === 'refused')
        await deps.web.chat.postEphemeral({
          channel: errand.thread.channel,
          user: errand.user,
          thread_ts: errand.thread.threadTs,
          text: outcome.message,
        });
      return;
    default: {
      const _never: never = errand;
      return _never;
    }
  }
}

/**
 * What Patchbay makes of a Slack message or button click once it was acknowledged: a session
 * start, a thread reply, an answer or a stop for the thread's session, or a question back (which
 * repository?) with no session yet. Everything here is safe to repeat: the pipeline retries a
 * delivery that throws.
 */
export class SlackRequests {
  readonly deps: SlackRequestDeps;

  constructor(deps: SlackRequestDeps) {
    this.deps = deps;
  }

  /** An app_mention or a message event (DMs, thread replies). */
  async onMessage(teamId: string, received: SlackMessageEvent, attempt = 1): Promise<Interpreted> {
    const { deps } = this;
    const bot = deps.identity.current();
    // A message that mentions the bot is a mention, whichever of its two events (message,
    // app_mention) arrived first: the pipeline keeps one per message.
    const event =
      received.type === 'message' && received.text?.includes(`<@${bot.botUserId}>`)
        ? { ...received, type: 'app_mention' }
        : received;
    const kind = classifyEvent(event);
    if (kind === 'ignore')
      return ignore('not a person writing to Patchbay (a bot, an edit, or a channel message without a mention)');
    if (event.user === bot.botUserId) return ignore('its own message');
    const thread = threadOf(teamId, event);
    const text = cleanText(event.text, bot.botUserId);
    const session = await deps.context.sessions.findByThread(thread);
    const pending = !session && kind === 'thread-reply' ? await deps.store.pending(thread) : undefined;
    // Replies in threads that are not ours are not addressed to us (unless they mention us).
    if (!session && !pending && kind === 'thread-reply' && event.type !== 'app_mention')
      return ignore('a reply in a thread that is not a session');
    // Addressed to Patchbay: from this workspace (or an allowed organisation), or refused.
    const userTeam = userTeamOf(event);
    if (!teamAllowed(bot.teams, userTeam))
      return refuseForeign(deps, {
        channel: event.channel,
        user: event.user!,
        userTeam: userTeam!,
        threadTs: event.thread_ts,
      });
    if (session || pending) {
      // A picture shared without words is a message too: its files are taken in after this.
      const said = text || (event.files?.length ? '(shared a picture)' : '');
      if (!said) return ignore('an empty message');
      const actor = await deps.actors.get(event.user!);
      const approvalId = session && (await openApprovalId(deps.context.sessions, session));
      if (session) return toSession(thread, { actor, user: event.user!, ts: event.ts }, said, session, approvalId);
      return resolvePending(deps, pending!, actor, said, event.ts);
    }
    if (CONNECT_GITHUB.test(text)) return connectGitHub(deps, event, thread);
    // The 👀 goes on with the first attempt only: a retry would find it there already.
    if (attempt === 1) {
      await deps.web.reactions
        .add({ channel: event.channel, timestamp: event.ts, name: 'eyes' })
        .catch((error: unknown) => deps.log.warn({ err: error }, 'could not add the 👀 reaction'));
    }
    const actor = await deps.actors.get(event.user!);
    return routeRequest(deps, thread, actor, text, findRepoMentions(text, deps.repoHosts), event.ts);
  }

  /** A button click on one of our messages. */
  async onAction(input: SlackAction): Promise<Interpreted> {
    const { deps } = this;
    if (!teamAllowed(deps.identity.current().teams, input.userTeam))
      return refuseForeign(deps, { ...input, userTeam: input.userTeam! });
    const thread: SlackThread = {
      source: 'slack',
      teamId: input.teamId,
      channel: input.channel,
      threadTs: input.threadTs ?? input.messageTs,
    };
    const actor = await deps.actors.get(input.user);
    const decision = approvalClick(input, thread, actor) ?? egressClick(input, thread, actor);
    if (decision)
      return { kind: 'inbound', inbound: decision, errand: { kind: 'say-refused', thread, user: input.user } };
    if (input.actionId.startsWith('patchbay_stop'))
      return { kind: 'inbound', inbound: { kind: 'stop', thread, actor } };
    if (input.actionId.startsWith('patchbay_answer')) {
      const picked = parseAnswerValue(input.value);
      const session = picked && (await deps.context.sessions.findByThread(thread));
      const choice = session && (await questionChoices(deps.context, session.id, picked.q))?.[picked.i];
      if (!picked || choice === undefined) return ignore('a choice button that names no known question or choice');
      return { kind: 'inbound', inbound: { kind: 'answer', thread, actor, questionId: picked.q, text: choice } };
    }
    if (input.actionId.startsWith('patchbay_pick_repo')) {
      const pending = await deps.store.pending(thread);
      if (pending?.candidates && input.value === PICK_ALL_REPOS) return startForAll(deps, pending, pending.candidates);
      const repo = pending?.candidates?.[Number(input.value)];
      if (!pending || !repo) return ignore('the repository choice is no longer open');
      return start(deps, { thread, actor: pending.actor, text: pending.text, repo, takesPending: true });
    }
    return ignore(`unknown action ${input.actionId}`);
  }
}

/** "All of them": one session in the recommended repository, told the others (allReposTask). */
function startForAll(
  deps: Pick<SlackRequestDeps, 'repoUrlFor'>,
  pending: PendingTask,
  candidates: RepoMention[],
): Interpreted {
  const { pick } = recommendRepo(pending.text, candidates);
  const text = allReposTask(pending.text, candidates, pick, deps.repoUrlFor);
  return start(deps, { thread: pending.thread, actor: pending.actor, text, repo: pick, takesPending: true });
}

/**
 * A session start for a thread and repository. `takesPending`: the thread's pending task is taken
 * in the reply step, once the session exists, so a retry after a failed start still finds it.
 */
function start(
  deps: Pick<SlackRequestDeps, 'repoUrlFor'>,
  input: { thread: SlackThread; actor: Actor; text: string; repo: RepoMention; takesPending?: boolean },
): Interpreted {
  const { thread, repo } = input;
  return {
    kind: 'inbound',
    inbound: {
      kind: 'start',
      thread,
      actor: input.actor,
      text: plainText(input.text),
      repo: deps.repoUrlFor(repo.owner, repo.repo),
      ...(repo.baseBranch && { baseBranch: repo.baseBranch }),
    },
    ...(input.takesPending && { errand: { kind: 'take-pending', thread } }),
  };
}

/** Decides on a request whose repository is still open: none named, one, or several to choose from. */
async function routeRequest(
  deps: SlackRequestDeps,
  thread: SlackThread,
  actor: Actor,
  task: string,
  repos: RepoMention[],
  /** The ts of the message being answered: the question is posted once for it. */
  answering: string,
): Promise<Interpreted> {
  if (repos.length === 1) return start(deps, { thread, actor, text: task, repo: repos[0]! });
  if (repos.length === 0) {
    await deps.store.savePending({ thread, text: task, actor, candidates: null });
    await say(deps, thread, `ask-repo:${answering}`, { text: ASK_FOR_REPO });
    return ignore('asked for the repository');
  }
  await deps.store.savePending({ thread, text: task, actor, candidates: repos });
  const { pick, why } = recommendRepo(task, repos);
  await say(deps, thread, `ask-repo:${answering}`, candidatesMessage(repos, pick, why, deps.repoUrlFor));
  return ignore('offered the repositories named to choose from');
}

/** A reply in a thread whose task waits for its repository. */
async function resolvePending(
  deps: SlackRequestDeps,
  pending: PendingTask,
  from: Actor,
  text: string,
  answering: string,
): Promise<Interpreted> {
  const named = findRepoMentions(text, deps.repoHosts);
  const chosen = pending.candidates
    ? (chooseCandidate(text, pending.candidates) ?? (named.length === 1 ? named[0] : undefined))
    : undefined;
  const repo = chosen ?? (!pending.candidates && named.length === 1 ? named[0] : undefined);
  if (repo)
    return start(deps, {
      thread: pending.thread,
      actor: pending.actor,
      text: pending.text || text,
      repo,
      takesPending: true,
    });
  if (named.length > 1)
    return routeRequest(deps, pending.thread, pending.actor, pending.text || text, named, answering);
  // Chatter from others in the thread is not addressed to us; the requester gets the question again.
  if (from.id !== pending.actor.id) return ignore('a reply from someone else in a thread waiting for its repository');
  if (pending.candidates) {
    const { pick, why } = recommendRepo(pending.text, pending.candidates);
    const message = candidatesMessage(pending.candidates, pick, why, deps.repoUrlFor);
    await say(deps, pending.thread, `ask-repo:${answering}`, message);
  } else {
    await say(deps, pending.thread, `ask-repo:${answering}`, { text: ASK_FOR_REPO });
  }
  return ignore('asked for the repository again');
}

/** A message in a thread that has a session: steer it, answer its open question, or stop it. */
function toSession(
  thread: SlackThread,
  from: { actor: Actor; user: string; ts: string },
  text: string,
  session: Pick<SessionRecord, 'pendingQuestion' | 'status'>,
  /** The open approval request a reply `approve` / `deny <reason>` decides (openApprovalId). */
  approvalId: string | undefined,
): Interpreted {
  const { actor } = from;
  if (isStopCommand(text))
    return {
      kind: 'inbound',
      inbound: { kind: 'stop', thread, actor },
      errand: { kind: 'say-not-running', thread, key: `not-running:${from.ts}` },
    };
  const question = session.status === 'waiting' ? session.pendingQuestion : null;
  const decision = approvalId && approvalReply(plainText(text), approvalId, thread, actor);
  const allow = decision || egressReply(plainText(text), thread, actor);
  if (allow) return { kind: 'inbound', inbound: allow, errand: { kind: 'say-refused', thread, user: from.user } };
  return {
    kind: 'inbound',
    inbound: question
      ? { kind: 'answer', thread, actor, questionId: question.questionId, text: plainText(text) }
      : { kind: 'message', thread, actor, text: plainText(text) },
  };
}
