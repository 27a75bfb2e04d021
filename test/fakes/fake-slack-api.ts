import { createReadLimit, createSlackTiers, type SlackTiers } from './slack-tiers.ts';
import { channelHistory, threadReplies, type ClampedRead } from './fake-slack-threads.ts';
import type { Chaos } from './chaos.ts';
import { dropBeforeAnswer, networkFault } from './chaos-faults.ts';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback } from './loopback.ts';
import { createFakeSlackOidc, type FakeSlackOidc } from './fake-slack-oidc.ts';
import { blockKitProblems, SLACK_LIMITS } from './slack-block-kit.ts';
import { createFakeSlackFiles, type FakeSlackFile } from './fake-slack-files.ts';
import { createFakeSlackAgent, type FakeSlackAgent } from './fake-slack-agent.ts';

/**
 * A loopback Slack Web API (wire-formats §1.8): `POST /api/<method>`, form-encoded or JSON bodies,
 * non-scalar arguments as JSON strings inside the form, errors as HTTP 200 `{ok:false, error}`,
 * 429 with Retry-After on demand. It rejects unknown methods, missing or wrong tokens, the wrong
 * token type, missing required arguments, unknown channels, blocks over Block Kit's limits
 * (slack-block-kit.ts), text over 40,000 characters and edits of messages it never saw, and keeps
 * every refusal in `refused` for the test to assert empty.
 */
export type FakeSlackUser = { id: string; name: string; realName?: string; email?: string; isBot?: boolean };

export type SlackCall = { method: string; args: Record<string, unknown>; token: string | undefined; at: number };

export type SlackMessage = {
  channel: string;
  ts: string;
  threadTs?: string;
  text: string;
  blocks?: unknown[];
  /** How many times chat.update changed it. */
  edits: number;
  /** The message metadata it was posted with (event_type, event_payload). */
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  /** A person's message (addMessage); the bot's own have none. */
  user?: string;
};

export type SlackRefusal = { method: string; error: string; detail?: string };

/** A file as a message event carries it. */
export type SharedSlackFile = {
  id: string;
  name: string;
  mimetype: string;
  url_private: string;
  url_private_download: string;
};

export type FakeSlackApi = {
  /** slackApiUrl for the WebClient, ending in `/api/`. */
  apiUrl: string;
  calls: SlackCall[];
  /** Every call answered `ok: false` (rate limits on demand excepted), with why. */
  refused: SlackRefusal[];
  /** Reads that asked for more than a page holds (cut to it, as Slack does): a caller that assumes it got them all. */
  clamped: ClampedRead[];
  /** Every 429 answered (on demand, by tier or read rule, or chaos), with its Retry-After in seconds. */
  rateLimited: { method: string; at: number; retryAfter: number }[];
  /** Requests made again (same method and arguments) while the Retry-After of their 429 was still running. */
  early: { method: string; at: number; waitLeftMs: number }[];
  messages: SlackMessage[];
  reactions: { channel: string; timestamp: string; name: string }[];
  /** Messages only one person saw (chat.postEphemeral). */
  ephemerals: { channel: string; user: string; text: string; threadTs?: string }[];
  /** Files uploaded with files.uploadV2 (fake-slack-files.ts). */
  files: FakeSlackFile[];
  /** The bot's own identity, as auth.test reports it. */
  bot: { userId: string; botId: string; teamId: string };
  /** Messages posted in a thread (the parent excluded), oldest first. */
  thread(channel: string, threadTs: string): SlackMessage[];
  /** A person's message, as if written in Slack: conversations.replies and .history list it. Its ts. */
  addMessage(input: { channel: string; user: string; text: string; threadTs?: string }): string;
  /** Answer the next `count` calls of `method` with 429 and this Retry-After. */
  rateLimit(method: string, retryAfterSeconds: number, count?: number): void;
  /** Does the next `count` calls of `method` and then drops the connection unanswered (the answer is lost). */
  dropAfterAccept(method: string, count?: number): void;
  /** From now on, holds methods to Slack's documented tiers and posts to about one a second per channel (slack-tiers.ts). */
  enforceTiers(): void;
  /** What apps.connections.open returns (Socket Mode). */
  setSocketUrl(url: string): void;
  /**
   * Shares a file as Slack would list it on a message event (`files`): served at its `url_private`
   * on this fake's host to the bot token only, and only while the token holds `files:read`.
   */
  shareFile(file: { name: string; mimetype: string; bytes: Uint8Array }): SharedSlackFile;
  /** Every request for a shared file, with whether it was answered with the file. */
  fileDownloads: { path: string; served: boolean }[];
  /**
   * Slack's agent surface (fake-slack-agent.ts): the agent sessions' statuses, status lines and
   * streams; `agent.state.available = false` makes it a workspace without it (unknown_method).
   */
  agent: Pick<FakeSlackAgent, 'statuses' | 'lines' | 'streams' | 'state' | 'statusesOf'>;
  /** Sign in with Slack: the app's client credentials and the browser's authorize step. */
  oidc: Pick<FakeSlackOidc, 'client' | 'authorize'>;
  close(): Promise<void>;
};

const required: Record<string, string[]> = {
  'auth.test': [],
  'chat.postMessage': ['channel'],
  'conversations.replies': ['channel', 'ts'],
  'conversations.history': ['channel'],
  'chat.update': ['channel', 'ts'],
  'chat.postEphemeral': ['channel', 'user'],
  'reactions.add': ['channel', 'timestamp', 'name'],
  'users.info': ['user'],
  'files.getUploadURLExternal': ['filename', 'length'],
  'files.completeUploadExternal': ['files'],
  'apps.connections.open': [],
  'openid.connect.token': [],
  'openid.connect.userInfo': [],
  'agents.sessions.setStatus': ['status'],
  'assistant.threads.setStatus': ['channel_id', 'thread_ts', 'status'],
  'chat.startStream': ['channel'],
  'chat.appendStream': ['channel', 'ts'],
  'chat.stopStream': ['channel', 'ts'],
};
/** Methods called with the app's client credentials or a user's Sign in with Slack token, not the bot token. */
const OIDC_METHODS = new Set(['openid.connect.token', 'openid.connect.userInfo']);

const chaosKinds = ['rate-limited', 'drop-after-accept'] as const;

/** The channel of Slack's docs examples, where the event fakes post by default. */
export const DEFAULT_CHANNELS = ['C123ABC456'];

export async function startFakeSlackApi(options: {
  botToken: string;
  appToken?: string;
  users?: FakeSlackUser[];
  /** Channels (and DM conversations) the bot is in; others get channel_not_found. */
  channels?: string[];
  /** The bot token's scopes, sent as Slack sends them (x-oauth-scopes); default: the app manifest's. */
  scopes?: string[];
  /** How long Slack keeps a stream open (about 306 s). */
  streamLifetimeMs?: number;
  /**
   * Transient faults at a rate (chaos.ts): on any method 429 ratelimited with Retry-After, an
   * answer held back 1 to 2 s or the connection dropped before any answer (nothing done;
   * chaos-faults.ts), and on posts (chat.postMessage, chat.update) the post done and its answer
   * lost with the connection.
   */
  chaos?: Chaos;
  /**
   * false: an app outside Slack's Marketplace (any self-hosted one commercially distributed):
   * conversations.replies and .history at one call a minute each and 15 objects a page
   * (slack-tiers.ts). Default true: their Tier 3 and full pages.
   */
  marketplace?: boolean;
  /** The minute of that one-a-minute rule, shorter so tests run fast. */
  readWindowMs?: number;
}): Promise<FakeSlackApi> {
  const scopes = options.scopes ?? manifestBotScopes();
  const users = new Map((options.users ?? []).map((u) => [u.id, u]));
  const channels = new Set(options.channels ?? DEFAULT_CHANNELS);
  const calls: SlackCall[] = [];
  const refused: SlackRefusal[] = [];
  const clamped: ClampedRead[] = [];
  const early: FakeSlackApi['early'] = [];
  const rateLimitedCalls: FakeSlackApi['rateLimited'] = [];
  const retryAfterUntil = new Map<string, number>();
  const marketplace = options.marketplace ?? true;
  const reads = marketplace ? undefined : createReadLimit(options.readWindowMs ?? 60_000);
  const messages: SlackMessage[] = [];
  const reactions: FakeSlackApi['reactions'] = [];
  const ephemerals: FakeSlackApi['ephemerals'] = [];
  const limits = new Map<string, { retryAfter: number; count: number }>();
  const drops = new Map<string, number>();
  let tiers: SlackTiers | undefined;
  const bot = { userId: 'U0BOT0001', botId: 'B0BOT0001', teamId: 'T123ABC456' };
  let socketUrl: string | undefined;
  const files = new Map<string, { bytes: Uint8Array; mimetype: string }>();
  const fileDownloads: FakeSlackApi['fileDownloads'] = [];
  const oidc = createFakeSlackOidc({ users, teamId: bot.teamId });
  let port = 0;
  const uploads = createFakeSlackFiles({ uploadBase: () => `http://127.0.0.1:${port}`, channels });
  /** Which methods need which scope beyond what every call needs. */
  const scopeOf: Record<string, string> = {
    'files.getUploadURLExternal': 'files:write',
    'files.completeUploadExternal': 'files:write',
    'conversations.replies': 'channels:history',
    'conversations.history': 'channels:history',
  };
  let clock = 0;
  const nextTs = () => {
    clock += 1;
    return `${1_800_000_000 + clock}.${String(clock).padStart(6, '0')}`;
  };
  // A stream shows in its thread as a message of the bot's, growing as it is appended to.
  const agent = createFakeSlackAgent({
    scopes,
    nextTs,
    lifetimeMs: options.streamLifetimeMs ?? 306_000,
    show(stream) {
      const shown = messages.find((m) => m.channel === stream.channel && m.ts === stream.ts);
      if (shown) shown.text = stream.text;
      else
        messages.push({
          channel: stream.channel,
          ts: stream.ts,
          threadTs: stream.threadTs,
          text: stream.text,
          edits: 0,
        });
    },
  });

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      refused.push({ method: req.url ?? '', error: 'fake_failed', detail: String(error) });
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const method = /^\/api\/([A-Za-z.]+)$/.exec(req.url ?? '')?.[1] ?? req.url ?? '';
    let chaosDrop = false;
    // Slack names the calling token's scopes on every Web API response.
    if (req.headers.authorization === `Bearer ${options.botToken}`) res.setHeader('x-oauth-scopes', scopes.join(','));
    const reply = (r: ServerResponse, body: Record<string, unknown>) => {
      if (body.ok === false)
        refused.push({
          method,
          error: String(body.error),
          ...(body.detail !== undefined && { detail: String(body.detail) }),
        });
      const drop = drops.get(method) ?? 0;
      if (body.ok === true && (drop > 0 || chaosDrop)) {
        // Done, and the answer never arrives: the connection goes away before a byte of it.
        if (!chaosDrop) drops.set(method, drop - 1);
        r.socket?.destroy();
        return;
      }
      sendJson(r, body);
    };
    if (req.method === 'GET' && req.url?.startsWith('/files-pri/')) return serveFile(req, res);
    const upload = /^\/upload\/v1\/(\w+)$/.exec(req.url ?? '');
    if (req.method === 'POST' && upload) {
      const answer = await uploads.upload(req, upload[1]!, await readRaw(req));
      if (answer.status !== 200) refused.push({ method: 'upload', error: answer.body });
      return res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
    }
    const match = /^\/api\/([A-Za-z.]+)$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !match) {
      refused.push({ method, error: 'not_found' });
      return res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
    const raw = (await readRaw(req)).toString('utf8');
    const type = req.headers['content-type'] ?? '';
    let args: Record<string, unknown>;
    if (type.startsWith('application/json')) args = JSON.parse(raw || '{}') as Record<string, unknown>;
    else if (type.startsWith('application/x-www-form-urlencoded') || raw === '')
      args = Object.fromEntries(new URLSearchParams(raw));
    else return reply(res, { ok: false, error: 'invalid_form_data' });
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = bearer ?? (typeof args.token === 'string' ? args.token : undefined);
    const call = { method, args, token, at: Date.now() };
    calls.push(call);
    noteEarly(call);
    const posting = method === 'chat.postMessage' || method === 'chat.update';
    const channel = args.channel ?? args.channel_id;
    const subject = typeof channel === 'string' ? channel : undefined;
    const chaos = options.chaos?.roll('slack', method, posting ? chaosKinds : ['rate-limited'], subject);
    chaosDrop = chaos === 'drop-after-accept';
    if (!chaos && (await networkFault(options.chaos, 'slack', method, subject))) return dropBeforeAnswer(res);
    if (chaos === 'rate-limited') return rateLimited(res, call, 1);

    const limit = limits.get(method);
    const tierWait = tiers?.check(method, typeof args.channel === 'string' ? args.channel : undefined) ?? 0;
    const readWait = tierWait || (reads?.check(method) ?? 0);
    if ((limit && limit.count > 0) || readWait > 0) {
      if (limit && limit.count > 0) limit.count -= 1;
      return rateLimited(res, call, readWait || limit!.retryAfter);
    }
    if (!(method in required)) return reply(res, { ok: false, error: 'unknown_method' });
    if (OIDC_METHODS.has(method)) return reply(res, oidc.call(method, args, bearer));
    if (!token) return reply(res, { ok: false, error: 'not_authed' });
    const appMethod = method === 'apps.connections.open';
    if (appMethod ? token !== options.appToken : token !== options.botToken) {
      const wrongType = appMethod ? token === options.botToken : token === options.appToken;
      return reply(res, { ok: false, error: wrongType ? 'not_allowed_token_type' : 'invalid_auth' });
    }
    for (const name of required[method]!) {
      if (args[name] === undefined || args[name] === '')
        return reply(res, {
          ok: false,
          error: name === 'channel' ? 'channel_not_found' : `invalid_arguments`,
          detail: `missing ${name}`,
        });
    }
    const scope = scopeOf[method];
    if (scope && !scopes.includes(scope)) return reply(res, { ok: false, error: 'missing_scope', needed: scope });
    if (required[method]!.includes('channel') && !channels.has(String(args.channel))) {
      return reply(res, { ok: false, error: 'channel_not_found', detail: `the bot is not in ${String(args.channel)}` });
    }
    let blocks: unknown[] | undefined;
    if (args.blocks !== undefined) {
      const parsed: unknown = typeof args.blocks === 'string' ? safeJson(args.blocks) : args.blocks;
      const problems = blockKitProblems(parsed);
      if (problems.length) return reply(res, { ok: false, error: 'invalid_blocks', detail: problems.join('; ') });
      blocks = parsed as unknown[];
    }
    const text = typeof args.text === 'string' ? args.text : '';
    if (text.length > SLACK_LIMITS.messageText)
      return reply(res, { ok: false, error: 'msg_too_long', detail: `${text.length} characters` });

    switch (method) {
      case 'auth.test':
        return reply(res, {
          ok: true,
          url: 'https://patchbay-test.slack.com/',
          team: 'Test',
          user: 'patchbay',
          team_id: bot.teamId,
          user_id: bot.userId,
          bot_id: bot.botId,
        });
      case 'apps.connections.open':
        if (!socketUrl) return reply(res, { ok: false, error: 'internal_error' });
        return reply(res, { ok: true, url: socketUrl });
      case 'users.info': {
        const user = users.get(String(args.user));
        if (!user) return reply(res, { ok: false, error: 'user_not_found' });
        return reply(res, {
          ok: true,
          user: {
            id: user.id,
            team_id: bot.teamId,
            name: user.name,
            real_name: user.realName ?? '',
            is_bot: user.isBot ?? false,
            profile: {
              real_name: user.realName ?? '',
              display_name: user.name,
              ...(user.email && { email: user.email }),
            },
          },
        });
      }
      case 'chat.postMessage': {
        if (!text && !blocks) return reply(res, { ok: false, error: 'no_text' });
        const threadTs = typeof args.thread_ts === 'string' && args.thread_ts ? args.thread_ts : undefined;
        if (threadTs && messages.some((m) => m.ts === threadTs && m.threadTs && m.threadTs !== m.ts)) {
          // Slack nests a reply-to-a-reply under the parent; posting it that way is our bug, not Slack's.
          return reply(res, { ok: false, error: 'thread_ts_is_a_reply' });
        }
        const metadata = args.metadata === undefined ? undefined : readMetadata(args.metadata);
        if (metadata === null) return reply(res, { ok: false, error: 'invalid_metadata_format' });
        const message: SlackMessage = {
          channel: String(args.channel),
          ts: nextTs(),
          text,
          edits: 0,
          ...(threadTs && { threadTs }),
          ...(blocks && { blocks }),
          ...(metadata && { metadata }),
        };
        messages.push(message);
        return reply(res, {
          ok: true,
          channel: message.channel,
          ts: message.ts,
          message: { type: 'message', subtype: 'bot_message', text, ts: message.ts, bot_id: bot.botId },
        });
      }
      case 'conversations.replies':
      case 'conversations.history': {
        const read = method === 'conversations.replies' ? threadReplies : channelHistory;
        const answer = read(messages, args, bot, marketplace);
        if (answer.clamped) clamped.push(answer.clamped);
        return reply(res, answer.body);
      }
      case 'chat.postEphemeral': {
        if (!text && !blocks) return reply(res, { ok: false, error: 'no_text' });
        if (!users.has(String(args.user))) return reply(res, { ok: false, error: 'user_not_in_channel' });
        const threadTs = typeof args.thread_ts === 'string' && args.thread_ts ? args.thread_ts : undefined;
        ephemerals.push({
          channel: String(args.channel),
          user: String(args.user),
          text,
          ...(threadTs && { threadTs }),
        });
        return reply(res, { ok: true, message_ts: nextTs() });
      }
      case 'chat.update': {
        const message = messages.find((m) => m.channel === args.channel && m.ts === args.ts);
        if (!message) return reply(res, { ok: false, error: 'message_not_found' });
        if (!text && !blocks) return reply(res, { ok: false, error: 'no_text' });
        message.text = text;
        if (blocks) message.blocks = blocks;
        else delete message.blocks;
        message.edits += 1;
        return reply(res, {
          ok: true,
          channel: message.channel,
          ts: message.ts,
          text,
          message: { type: 'message', text, ts: message.ts },
        });
      }
      case 'reactions.add': {
        const name = String(args.name);
        if (name.includes(':')) return reply(res, { ok: false, error: 'invalid_name' });
        const seen = reactions.some(
          (r) => r.channel === args.channel && r.timestamp === args.timestamp && r.name === name,
        );
        if (seen) return reply(res, { ok: false, error: 'already_reacted' });
        reactions.push({ channel: String(args.channel), timestamp: String(args.timestamp), name });
        return reply(res, { ok: true });
      }
      case 'agents.sessions.setStatus':
      case 'assistant.threads.setStatus':
      case 'chat.startStream':
      case 'chat.appendStream':
      case 'chat.stopStream':
        return reply(res, agent.call(method, args));
      case 'files.getUploadURLExternal':
        return reply(res, uploads.getUploadUrl(args));
      case 'files.completeUploadExternal':
        return reply(res, uploads.complete(args));
      default:
        return reply(res, { ok: false, error: 'unknown_method' });
    }
  }

  /** A private file: the bot token with files:read gets it; anyone else is refused, as Slack does. */
  function serveFile(req: IncomingMessage, res: ServerResponse) {
    const path = req.url ?? '';
    const file = files.get(path);
    const problem = !file
      ? 'file_not_found'
      : req.headers.authorization !== `Bearer ${options.botToken}`
        ? 'invalid_auth'
        : !scopes.includes('files:read')
          ? 'missing_scope'
          : undefined;
    fileDownloads.push({ path, served: !problem });
    if (problem || !file) {
      refused.push({ method: 'files-pri', error: problem ?? 'file_not_found', detail: path });
      return res.writeHead(problem === 'file_not_found' ? 404 : 403, { 'content-type': 'text/plain' }).end(problem);
    }
    res.writeHead(200, { 'content-type': file.mimetype, 'content-length': String(file.bytes.byteLength) });
    res.end(Buffer.from(file.bytes));
  }

  /** Slack's 429: the Retry-After header in seconds and `ratelimited` in the body; noted to catch a caller that ignores it. */
  function rateLimited(res: ServerResponse, call: SlackCall, retryAfter: number) {
    const method = call.method;
    retryAfterUntil.set(sameCall(call), Date.now() + retryAfter * 1000);
    rateLimitedCalls.push({ method, at: Date.now(), retryAfter });
    res.writeHead(429, { 'retry-after': String(retryAfter), 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: false, error: 'ratelimited' }));
  }

  /**
   * The same request again (same method and arguments) before the Retry-After it was given ran
   * out: a caller that did not wait. Other calls of the method may have been on their way already.
   */
  function noteEarly(call: SlackCall) {
    const until = retryAfterUntil.get(sameCall(call));
    // Half a second of grace: Slack's Retry-After is whole seconds, its clock not ours.
    if (until !== undefined && Date.now() < until - 500)
      early.push({ method: call.method, at: Date.now(), waitLeftMs: until - Date.now() });
  }

  const listening = await listenOnLoopback(server);
  port = listening.port;
  const { close } = listening;
  let fileCount = 0;
  return {
    apiUrl: `http://127.0.0.1:${port}/api/`,
    calls,
    refused,
    clamped,
    rateLimited: rateLimitedCalls,
    early,
    messages,
    reactions,
    ephemerals,
    files: uploads.files,
    bot,
    thread: (channel, threadTs) => messages.filter((m) => m.channel === channel && m.threadTs === threadTs),
    addMessage({ channel, user, text, threadTs }) {
      const ts = nextTs();
      messages.push({ channel, ts, text, edits: 0, user, ...(threadTs && { threadTs }) });
      return ts;
    },
    rateLimit(method, retryAfter, count = 1) {
      limits.set(method, { retryAfter, count });
    },
    dropAfterAccept(method, count = 1) {
      drops.set(method, count);
    },
    enforceTiers() {
      tiers = createSlackTiers();
    },
    setSocketUrl(url) {
      socketUrl = url;
    },
    shareFile(file) {
      fileCount += 1;
      const id = `F0FILE${String(fileCount).padStart(4, '0')}`;
      const path = `/files-pri/${bot.teamId}-${id}/download/${encodeURIComponent(file.name)}`;
      files.set(path, { bytes: file.bytes, mimetype: file.mimetype });
      const url = `http://127.0.0.1:${port}${path}`;
      return { id, name: file.name, mimetype: file.mimetype, url_private: url, url_private_download: url };
    },
    fileDownloads,
    agent,
    oidc: {
      client: oidc.client,
      authorize(url, userId) {
        const result = oidc.authorize(url, userId);
        if ('error' in result) refused.push({ method: 'openid/connect/authorize', error: result.error });
        return result;
      },
    },
    close,
  };
}

/** The bot scopes slack-app-manifest.yaml asks for: what an installed app's bot token holds. */
function manifestBotScopes(): string[] {
  const manifest = readFileSync(new URL('../../slack-app-manifest.yaml', import.meta.url), 'utf8');
  const bot = /\n {4}bot:\n((?: {6}- .+\n)+)/.exec(manifest);
  if (!bot) throw new Error('slack-app-manifest.yaml lists no bot scopes');
  return [...bot[1]!.matchAll(/- ([a-z_:.]+)/g)].map((m) => m[1]!);
}

function sameCall(call: SlackCall): string {
  return `${call.method} ${JSON.stringify(call.args)}`;
}

function sendJson(res: ServerResponse, body: Record<string, unknown>) {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
}

/** Slack's message metadata (a JSON string or object): an event_type and an object event_payload; null when malformed. */
function readMetadata(value: unknown): SlackMessage['metadata'] | null {
  const parsed = typeof value === 'string' ? safeJson(value) : value;
  const m = parsed as { event_type?: unknown; event_payload?: unknown } | undefined;
  if (typeof m?.event_type !== 'string' || typeof m.event_payload !== 'object' || m.event_payload === null) return null;
  return { event_type: m.event_type, event_payload: m.event_payload as Record<string, unknown> };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
