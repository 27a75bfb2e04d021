import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { IntegrationContext } from '../integration-module.ts';
import type { Actor } from '../../src/core/actor.ts';
import { describeError } from '../../src/core/errors.ts';
import { chooseCandidate, findRepoMentions, recommendRepo, type RepoMention } from './repo-mention.ts';
import type { ActorDirectory } from './slack-actors.ts';
import { ASK_FOR_REPO, candidatesMessage, parseAnswerValue, type SlackText } from './slack-blocks.ts';
import { classifyEvent, cleanText, isStopCommand, plainText, threadOf, type SlackMessageEvent } from './slack-normalize.ts';
import type { PendingTask, SlackStore, SlackThread } from './slack-store.ts';

export type SlackWeb = Pick<WebClient, 'chat' | 'reactions' | 'users'>;

/** "connect github", said to the bot: the person gets a private sign-in link. */
const CONNECT_GITHUB = /^(connect|link)\s+(my\s+)?github( account)?[.!]?$/i;

export type SlackInboundDeps = {
  context: Pick<IntegrationContext, 'handle' | 'findSession' | 'recordDelivery'>;
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
};

export type SlackInbound = ReturnType<typeof createSlackInbound>;

/**
 * What Patchbay does with a Slack message once Bolt has acked it: start a session, hold the task
 * until a repository is named, or pass a thread reply, an answer or a stop to the thread's session.
 * Every path writes to the database and enqueues at most; the run itself happens elsewhere.
 */
export function createSlackInbound(deps: SlackInboundDeps) {
  const { context, store, web, actors, log } = deps;

  async function post(thread: SlackThread, message: SlackText): Promise<void> {
    await web.chat.postMessage({ channel: thread.channel, thread_ts: thread.threadTs, text: message.text, ...(message.blocks && { blocks: message.blocks as never }), unfurl_links: false });
  }

  async function start(thread: SlackThread, actor: Actor, text: string, repo: RepoMention): Promise<void> {
    const outcome = await context.handle({
      kind: 'start',
      thread,
      actor,
      text: plainText(text),
      repo: deps.repoUrlFor(repo.owner, repo.repo),
      ...(repo.baseBranch && { baseBranch: repo.baseBranch }),
    });
    log.info({ thread, outcome: outcome.kind }, 'Slack request handed to the session service');
  }

  /** Decides on a request whose repository is still open: none named, one, or several to choose from. */
  async function routeRequest(thread: SlackThread, actor: Actor, task: string, repos: RepoMention[]): Promise<void> {
    if (repos.length === 1) return start(thread, actor, task, repos[0]!);
    if (repos.length === 0) {
      await store.savePending({ thread, text: task, actor, candidates: null });
      return post(thread, { text: ASK_FOR_REPO });
    }
    await store.savePending({ thread, text: task, actor, candidates: repos });
    const { pick, why } = recommendRepo(task, repos);
    return post(thread, candidatesMessage(repos, pick, why, deps.repoUrlFor));
  }

  /** A reply in a thread whose task waits for its repository. */
  async function resolvePending(pending: PendingTask, from: Actor, text: string): Promise<void> {
    const named = findRepoMentions(text, deps.repoHosts);
    const chosen = pending.candidates ? (chooseCandidate(text, pending.candidates) ?? (named.length === 1 ? named[0] : undefined)) : undefined;
    if (chosen || (!pending.candidates && named.length === 1)) {
      if (!(await store.takePending(pending.thread))) return;
      const task = pending.text || text;
      return start(pending.thread, pending.actor, task, chosen ?? named[0]!);
    }
    if (named.length > 1) return routeRequest(pending.thread, pending.actor, pending.text || text, named);
    // Chatter from others in the thread is not addressed to us; the requester gets the question again.
    if (from.id === pending.actor.id) {
      if (pending.candidates) {
        const { pick, why } = recommendRepo(pending.text, pending.candidates);
        return post(pending.thread, candidatesMessage(pending.candidates, pick, why, deps.repoUrlFor));
      }
      return post(pending.thread, { text: ASK_FOR_REPO });
    }
  }

  /**
   * The link is bound to the person who asked, so it goes to them alone (ephemeral): whoever opens
   * it attaches their GitHub account to that person, and pull requests they ask for open as them.
   */
  async function connectGitHub(event: SlackMessageEvent, thread: SlackThread): Promise<void> {
    const user = event.user!;
    const text = deps.signInLink
      ? `Connect your GitHub account so the pull requests you ask for open under your name (the link works for an hour): ${deps.signInLink(await actors.get(user))}`
      : 'GitHub sign-in is not set up on this Patchbay (GITHUB_OAUTH_CLIENT_ID, GITHUB_OAUTH_CLIENT_SECRET and PATCHBAY_SECRET_KEY); pull requests open as the Patchbay app.';
    await web.chat.postEphemeral({ channel: thread.channel, user, text, ...(event.thread_ts && { thread_ts: event.thread_ts }) });
  }

  /** A message in a thread that has a session: steer it, answer its open question, or stop it. */
  async function toSession(thread: SlackThread, actor: Actor, text: string, session: { pendingQuestion: { questionId: string } | null; status: string }) {
    if (isStopCommand(text)) {
      const outcome = await context.handle({ kind: 'stop', thread, actor });
      if (outcome.kind === 'not-running') await post(thread, { text: `Nothing is running here (the session is ${outcome.session.status}).` });
      return;
    }
    const question = session.status === 'waiting' ? session.pendingQuestion : null;
    await context.handle(
      question ? { kind: 'answer', thread, actor, questionId: question.questionId, text: plainText(text) } : { kind: 'message', thread, actor, text: plainText(text) },
    );
  }

  return {
    /** An app_mention or a message event (DMs, thread replies). */
    async onMessage(teamId: string, event: SlackMessageEvent): Promise<void> {
      const kind = classifyEvent(event);
      if (kind === 'ignore' || event.user === deps.botUserId) return;
      const thread = threadOf(teamId, event);
      const text = cleanText(event.text, deps.botUserId);
      try {
        const session = await context.findSession(thread);
        const pending = !session && kind === 'thread-reply' ? await store.pending(thread) : undefined;
        // Replies in threads that are not ours are not addressed to us (unless they mention us).
        if (!session && !pending && kind === 'thread-reply' && event.type !== 'app_mention') return;
        // A reply that mentions the bot arrives twice (app_mention and message): one Slack message, one action.
        if (!(await context.recordDelivery('slack', `msg:${event.channel}:${event.ts}`))) return;
        if (session || pending) {
          if (!text) return;
          const actor = await actors.get(event.user!);
          if (session) return await toSession(thread, actor, text, session);
          return await resolvePending(pending!, actor, text);
        }
        if (CONNECT_GITHUB.test(text)) return await connectGitHub(event, thread);
        await web.reactions.add({ channel: event.channel, timestamp: event.ts, name: 'eyes' }).catch((error: unknown) => log.warn({ err: error }, 'could not add the 👀 reaction'));
        const actor = await actors.get(event.user!);
        await routeRequest(thread, actor, text, findRepoMentions(text, deps.repoHosts));
      } catch (error) {
        log.error({ err: error, thread }, 'Slack message handling failed');
        await post(thread, { text: `Sorry, I could not take this request: ${describeError(error)}` }).catch(() => undefined);
      }
    },

    /** A button click on one of our messages. */
    async onAction(input: { teamId: string; channel: string; messageTs: string; threadTs?: string; user: string; actionId: string; value: string; actionTs: string }): Promise<void> {
      const thread: SlackThread = { source: 'slack', teamId: input.teamId, channel: input.channel, threadTs: input.threadTs ?? input.messageTs };
      const deliveryId = `action:${input.messageTs}:${input.actionTs}:${input.user}`;
      const actor = await actors.get(input.user);
      if (input.actionId.startsWith('patchbay_stop')) {
        await context.handle({ kind: 'stop', thread, actor, deliveryId });
        return;
      }
      if (input.actionId.startsWith('patchbay_answer')) {
        const picked = parseAnswerValue(input.value);
        const session = picked && (await context.findSession(thread));
        const choice = session && (await store.questionChoices(session.id, picked.q))?.[picked.i];
        if (!picked || choice === undefined) {
          log.warn({ thread, actionId: input.actionId }, 'a choice button that names no known question or choice; ignored');
          return;
        }
        await context.handle({ kind: 'answer', thread, actor, questionId: picked.q, text: choice, deliveryId });
        return;
      }
      if (input.actionId.startsWith('patchbay_pick_repo')) {
        const pending = await store.pending(thread);
        const repo = pending?.candidates?.[Number(input.value)];
        if (!pending || !repo || !(await store.takePending(thread))) return;
        await start(thread, pending.actor, pending.text, repo);
      }
    },
  };
}
