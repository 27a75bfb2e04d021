/**
 * Slack's agent surface, as docs.slack.dev documents it (ai/agent-sessions, the method pages of
 * agents.sessions.setStatus, assistant.threads.setStatus, chat.startStream, chat.appendStream,
 * chat.stopStream, and the agent_session_stopped event):
 *
 * - `agents.sessions.setStatus {channel_id, thread_ts, status, title?, initiator_user_id?}`: status
 *   one of active | processing | suspended | closed; thread_ts required for a thread-based session;
 *   only apps declared as agents (which adds `assistant:write`) may create sessions; the bot token
 *   needs `chat:write`. While `processing`, Slack shows the native Stop button; answered with the
 *   session's status.
 * - `assistant.threads.setStatus {channel_id, thread_ts, status}`: the status line (chat:write).
 * - `chat.startStream {channel, thread_ts, markdown_text?, recipient_user_id, recipient_team_id}` →
 *   `{ts}`; a stream in a channel needs both recipients; markdown_text at most 12,000 characters.
 * - `chat.appendStream {channel, ts, markdown_text}` and `chat.stopStream {channel, ts,
 *   markdown_text?, session_status?}`: only on a message still streaming (Slack ends a stream about
 *   306 s after it started), else `message_not_in_streaming_state`.
 *
 * A workspace without the surface (`available: false`: a Slack flavour or plan without it) answers
 * `unknown_method` to all four, as Slack does for a method it does not have.
 */
const AGENT_METHODS = [
  'agents.sessions.setStatus',
  'assistant.threads.setStatus',
  'chat.startStream',
  'chat.appendStream',
  'chat.stopStream',
] as const;

export const SESSION_STATUSES = ['active', 'processing', 'suspended', 'closed'] as const;

/** A stream as the fake holds it; its text is what the thread shows. */
export type FakeSlackStream = {
  channel: string;
  threadTs: string;
  ts: string;
  text: string;
  appends: number;
  state: 'streaming' | 'stopped';
  startedAt: number;
  sessionStatus?: string;
};

/** One agents.sessions.setStatus (or chat.stopStream session_status) that Slack applied, in order. */
export type AgentStatusChange = { channel: string; threadTs: string; status: string; at: number };

type Answer = Record<string, unknown>;

export function createFakeSlackAgent(options: {
  scopes: readonly string[];
  nextTs: () => string;
  /** The message a stream shows in its thread, kept current as it grows. */
  show: (stream: FakeSlackStream) => void;
  lifetimeMs: number;
}) {
  const statuses: AgentStatusChange[] = [];
  const lines: AgentStatusChange[] = [];
  const streams: FakeSlackStream[] = [];
  const state = { available: true };

  function setStatus(args: Record<string, unknown>): Answer {
    if (!options.scopes.includes('assistant:write'))
      return {
        ok: false,
        error: 'missing_scope',
        needed: 'assistant:write',
        detail: 'the app is not declared as an agent',
      };
    const status = String(args.status);
    if (!(SESSION_STATUSES as readonly string[]).includes(status))
      return { ok: false, error: 'invalid_arguments', detail: `status ${status}` };
    const threadTs = threadOf(args.thread_ts);
    if (!threadTs) return { ok: false, error: 'invalid_thread_ts', detail: String(args.thread_ts) };
    const channel = String(args.channel_id ?? '');
    if (!channel) return { ok: false, error: 'channel_not_found', detail: 'channel_id is required in channels' };
    statuses.push({ channel, threadTs, status, at: Date.now() });
    return { ok: true, status, title: typeof args.title === 'string' ? args.title : '' };
  }

  function statusLine(args: Record<string, unknown>): Answer {
    const threadTs = threadOf(args.thread_ts);
    if (!threadTs) return { ok: false, error: 'invalid_thread_ts', detail: String(args.thread_ts) };
    lines.push({ channel: String(args.channel_id), threadTs, status: String(args.status), at: Date.now() });
    return { ok: true };
  }

  function start(args: Record<string, unknown>, text: string): Answer {
    const channel = String(args.channel);
    const threadTs = threadOf(args.thread_ts);
    if (!threadTs) return { ok: false, error: 'invalid_thread_ts', detail: 'streams reply to a request' };
    // Outside a DM, Slack needs to know whom the stream is for.
    if (!channel.startsWith('D')) {
      if (!args.recipient_user_id) return { ok: false, error: 'missing_recipient_user_id' };
      if (!args.recipient_team_id) return { ok: false, error: 'missing_recipient_team_id' };
    }
    if (text.length > 12_000) return { ok: false, error: 'msg_too_long', detail: `${text.length} characters` };
    const stream: FakeSlackStream = {
      channel,
      threadTs,
      ts: options.nextTs(),
      text,
      appends: 0,
      state: 'streaming',
      startedAt: Date.now(),
    };
    streams.push(stream);
    options.show(stream);
    return { ok: true, channel, ts: stream.ts };
  }

  function streaming(args: Record<string, unknown>): { stream: FakeSlackStream } | { refused: Answer } {
    const stream = streams.find((s) => s.channel === args.channel && s.ts === args.ts);
    if (!stream) return { refused: { ok: false, error: 'message_not_found' } };
    if (stream.state === 'streaming' && Date.now() - stream.startedAt > options.lifetimeMs) stream.state = 'stopped';
    if (stream.state !== 'streaming') return { refused: { ok: false, error: 'message_not_in_streaming_state' } };
    return { stream };
  }

  function append(args: Record<string, unknown>, text: string): Answer {
    const found = streaming(args);
    if ('refused' in found) return found.refused;
    const { stream } = found;
    if (!text) return { ok: false, error: 'invalid_arguments', detail: 'markdown_text or chunks is required' };
    if (text.length > 12_000) return { ok: false, error: 'msg_too_long', detail: `${text.length} characters` };
    stream.text += text;
    stream.appends += 1;
    options.show(stream);
    return { ok: true, channel: stream.channel, ts: stream.ts };
  }

  function stop(args: Record<string, unknown>, text: string): Answer {
    const found = streaming(args);
    if ('refused' in found) return found.refused;
    const { stream } = found;
    const status = args.session_status;
    if (status !== undefined && !(SESSION_STATUSES as readonly string[]).includes(String(status)))
      return { ok: false, error: 'invalid_arguments', detail: `session_status ${String(status)}` };
    stream.text += text;
    stream.state = 'stopped';
    if (status !== undefined) {
      stream.sessionStatus = String(status);
      statuses.push({ channel: stream.channel, threadTs: stream.threadTs, status: String(status), at: Date.now() });
    }
    options.show(stream);
    return { ok: true, channel: stream.channel, ts: stream.ts, message: { text: stream.text, ts: stream.ts } };
  }

  return {
    statuses,
    lines,
    streams,
    state,
    /** Answers one of AGENT_METHODS (arguments already checked for the token and required names). */
    call(method: (typeof AGENT_METHODS)[number], args: Record<string, unknown>): Answer {
      if (!state.available) return { ok: false, error: 'unknown_method' };
      if (!options.scopes.includes('chat:write')) return { ok: false, error: 'missing_scope', needed: 'chat:write' };
      const text = typeof args.markdown_text === 'string' ? args.markdown_text : '';
      switch (method) {
        case 'agents.sessions.setStatus':
          return setStatus(args);
        case 'assistant.threads.setStatus':
          return statusLine(args);
        case 'chat.startStream':
          return start(args, text);
        case 'chat.appendStream':
          return append(args, text);
        case 'chat.stopStream':
          return stop(args, text);
        default: {
          const _never: never = method;
          return _never;
        }
      }
    },
    /** The statuses a thread's agent session went through, in order. */
    statusesOf(channel: string, threadTs: string): string[] {
      return statuses.filter((s) => s.channel === channel && s.threadTs === threadTs).map((s) => s.status);
    },
  };
}

export type FakeSlackAgent = ReturnType<typeof createFakeSlackAgent>;

function threadOf(value: unknown): string | undefined {
  return typeof value === 'string' && /^\d+\.\d+$/.test(value) ? value : undefined;
}
