import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SlackThread } from './slack-store.ts';

/** The part of the Web API client Slack's agent surface is driven with. */
export type SlackAgentWeb = Pick<WebClient, 'agents' | 'assistant' | 'chat'>;

/** An agent session's lifecycle status (agents.sessions.setStatus). */
export type AgentStatus = 'processing' | 'suspended' | 'active' | 'closed';

/** Who a stream is for: Slack needs both outside a DM (chat.startStream's recipient_*). */
export type StreamRecipient = { userId: string; teamId: string };

/**
 * Slack answers these when the workspace or the app has no agent surface: a Slack flavour or plan
 * without the methods, an app not declared as an agent, a token without the scope. They last, so
 * the surface is left alone from then on and the thread is served as before (status message, Stop
 * button, posted replies).
 */
const UNAVAILABLE = new Set([
  'unknown_method',
  'not_allowed',
  'missing_scope',
  'feature_not_enabled',
  'method_deprecated',
]);

/** Slack's warning when the app does not subscribe to agent_session_stopped: its Stop does nothing. */
const NO_STOP_EVENT = 'missing_agent_session_stopped_event_subscription';

/** Slack ends a stream about 306 s after it started; one is rolled over to a new one well before. */
export const STREAM_ROLLOVER_MS = 240_000;

/**
 * Slack's agent-session surface for a thread (docs.slack.dev/ai/agent-sessions): the session's
 * status (`processing` shows Slack's native Stop button, `suspended` says it waits on a person,
 * `active` that it is done), the status line under it (assistant.threads.setStatus) and streamed
 * replies (chat.startStream / appendStream / stopStream). Every call is best-effort and never
 * throws: a refusal that means the surface is missing is remembered for the process (`available`
 * turns false, said once in the log), anything else is logged and the caller goes on.
 */
export class SlackAgentSurface {
  readonly #web: SlackAgentWeb;
  readonly #log: Logger;
  #missing: string | undefined;

  constructor(deps: { web: SlackAgentWeb; log: Logger }) {
    this.#web = deps.web;
    this.#log = deps.log;
  }

  /** False once Slack said this workspace or app has no agent surface. */
  get available(): boolean {
    return this.#missing === undefined;
  }

  /**
   * Sets the thread's agent-session status (creating the session on the first call). `stop` is
   * false when Slack warned that its Stop button will not reach Patchbay; undefined when not set.
   */
  async setStatus(
    thread: SlackThread,
    status: AgentStatus,
    create?: { title: string; initiator?: string },
  ): Promise<{ stop: boolean } | undefined> {
    const answer = await this.#call('agents.sessions.setStatus', () =>
      this.#web.agents.sessions.setStatus({
        channel_id: thread.channel,
        thread_ts: thread.threadTs,
        status,
        ...(create && { title: create.title.slice(0, 200) }),
        ...(create?.initiator && { initiator_user_id: create.initiator }),
      }),
    );
    if (!answer) return undefined;
    const warnings = [answer.warning, ...(answer.response_metadata?.warnings ?? [])].join(',');
    return { stop: !warnings.includes(NO_STOP_EVENT) };
  }

  /** The status line under the thread (what the run is doing now); Slack clears it after two minutes. */
  async setLine(thread: SlackThread, text: string): Promise<void> {
    await this.#call('assistant.threads.setStatus', () =>
      this.#web.assistant.threads.setStatus({ channel_id: thread.channel, thread_ts: thread.threadTs, status: text }),
    );
  }

  /** Opens a stream in the thread with its first text; its ts, or undefined when Slack refused it. */
  async startStream(thread: SlackThread, text: string, to: StreamRecipient): Promise<string | undefined> {
    const answer = await this.#call('chat.startStream', () =>
      this.#web.chat.startStream({
        channel: thread.channel,
        thread_ts: thread.threadTs,
        markdown_text: text,
        recipient_user_id: to.userId,
        recipient_team_id: to.teamId,
      }),
    );
    return answer?.ts;
  }

  /** Appends to an open stream; false when it is over (Slack ended it, or someone pressed Stop). */
  async appendStream(thread: SlackThread, ts: string, text: string): Promise<boolean> {
    const answer = await this.#call('chat.appendStream', () =>
      this.#web.chat.appendStream({ channel: thread.channel, ts, markdown_text: text }),
    );
    return answer !== undefined;
  }

  /** Ends a stream with its last text and, when given, the session status it leaves the thread in. */
  async stopStream(thread: SlackThread, ts: string, text: string, status?: AgentStatus): Promise<boolean> {
    const answer = await this.#call('chat.stopStream', () =>
      this.#web.chat.stopStream({
        channel: thread.channel,
        ts,
        ...(text && { markdown_text: text }),
        ...(status && { session_status: status }),
      }),
    );
    return answer !== undefined;
  }

  async #call<T>(method: string, call: () => Promise<T>): Promise<T | undefined> {
    if (this.#missing) return undefined;
    try {
      return await call();
    } catch (error) {
      const refusal = platformError(error);
      if (refusal && UNAVAILABLE.has(refusal)) {
        this.#missing = refusal;
        this.#log.info(
          { method, error: refusal },
          "Slack's agent surface is not available to this app (streamed replies, native Stop): threads get the status message and its Stop button instead; see slack-app-manifest.yaml",
        );
      } else {
        this.#log.warn({ method, err: error }, "a call to Slack's agent surface failed; the thread goes on without it");
      }
      return undefined;
    }
  }
}

function platformError(error: unknown): string | undefined {
  const { code, data } = error as { code?: string; data?: { error?: string } };
  return code === 'slack_webapi_platform_error' ? data?.error : undefined;
}
