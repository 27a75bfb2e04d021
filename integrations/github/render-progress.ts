import { modeNotice } from '../../src/core/session-mode.ts';
import { describeEgressBlock, egressBlockedNote } from '../../src/core/egress-block.ts';
import { describeToolCall } from '../../src/core/tool-call.ts';
import type { StoredEvent } from '../../src/core/events.ts';
import { modelWaitNotice } from '../../src/core/model-notice.ts';
import { queueNotice } from '../../src/core/queue-notice.ts';
import { repoRefusedNotice } from '../../src/core/repo-access.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';

export type ProgressView = {
  session: Pick<SessionRecord, 'status' | 'pendingQuestion' | 'error' | 'result'>;
  /** The tool the agent ran last, if any since the request. */
  step?: { name: string; input: unknown };
  prUrl?: string;
  /** Hosts the sandbox was refused (describeEgressBlock texts), shown so a person can allow them. */
  blocked?: string[];
  /** Repositories refused to the agent since the request (repoRefusedNotice texts). */
  refused?: string[];
  /** What the repository's rules say before its pull request opens (publish-notice texts). */
  notices?: string[];
  /**
   * The last waiting notice since the request: where it stands in line, that it started after
   * waiting, or that the model service is down and the run waits for it.
   */
  queue?: string;
  sessionUrl: string;
  mention: string;
  /** The session's sub-tasks as renderSubtasks lists them, under the status. */
  subtasks?: string;
  /** Questions its sub-tasks asked in this thread that wait for an answer (while it waits for them). */
  subtaskQuestions?: string[];
};

const settledStatuses = new Set(['completed', 'failed', 'cancelled', 'waiting']);

/** The text of a request's progress comment, edited in place as the run moves. */
export function renderProgress(view: ProgressView): string {
  const how = `reply \`${view.mention} allow <host> for this session\` (or \`for this repository\`)`;
  const note = egressBlockedNote(view.blocked ?? [], how);
  const status = view.subtasks ? `${renderStatusBody(view)}\n\n${view.subtasks}` : renderStatusBody(view);
  const body = [
    status,
    ...(view.refused ?? []).map((r) => `> ⊘ ${r}`),
    ...(view.notices ?? []).map((n) => `> ⓘ ${n}`),
  ].join('\n\n');
  return note ? `${body}\n\n> 🚫 ${note}` : body;
}

function renderStatusBody(view: ProgressView): string {
  const { session } = view;
  const link = `[Session](${view.sessionUrl})`;
  switch (session.status) {
    case 'queued':
      return `⏳ ${view.queue ?? 'Queued.'} ${link}`;
    case 'running':
      return `🔄 Working on it.${view.queue ? ` ${view.queue}` : ''}${view.step ? `\n\nCurrent step: ${describeStep(view.step)}` : ''}\n\n${link}`;
    case 'waiting': {
      const q = session.pendingQuestion;
      // Waiting with no question is a session waiting for the sub-tasks listed below.
      if (!q && view.subtasks) return waitingForSubtasks(view, link);
      const question = q ? quote(q.question) : '> (question unavailable)';
      const choices = q?.choices?.length
        ? `\n\nChoices: ${q.choices.map((c) => `\`${c}\``).join(', ')}${q.recommended ? ` (I recommend \`${q.recommended}\`)` : ''}`
        : '';
      if (q?.approval)
        return `✋ Approval needed:\n\n${question}\n\nReply \`${view.mention} approve\` to run it once, or \`${view.mention} deny <reason>\`. ${link}`;
      return `❓ I need an answer to continue:\n\n${question}${choices}\n\nReply with a comment that mentions ${view.mention}. ${link}`;
    }
    case 'completed': {
      const summary = session.result?.summary?.trim();
      const pr = view.prUrl ?? session.result?.prUrl;
      const unpushed = session.result?.unpushed;
      // An answer (ask mode) is the whole reply: nothing was to change.
      if (session.result?.answered) return `💬 ${clip(summary || 'No answer.', 6000)}\n\n${link}`;
      const outcome = unpushed
        ? `\n\n${unpushed}`
        : pr
          ? `\n\nPull request: ${pr}`
          : session.result?.commit
            ? ''
            : '\n\nNo changes were needed.';
      return `✅ Done.${summary ? `\n\n${clip(summary, 3000)}` : ''}${outcome}\n\n${link}`;
    }
    case 'failed':
      return `❌ Failed: ${clip(session.error ?? 'the run failed', 1500)}\n\n${link}`;
    case 'cancelled':
      return `⏹️ Stopped. ${link}`;
    default: {
      const _never: never = session.status;
      return _never;
    }
  }
}

/** A session waiting for its sub-tasks: that, or the questions they asked here and wait on. */
function waitingForSubtasks(view: ProgressView, link: string): string {
  const open = view.subtaskQuestions ?? [];
  if (open.length === 0) return `⏳ Waiting for its sub-tasks to finish. ${link}`;
  const asks = open.length === 1 ? 'A sub-task needs an answer' : 'Sub-tasks need answers';
  return `❓ ${asks}:\n\n${open.map(quote).join('\n\n')}\n\nReply with a comment that mentions ${view.mention}. ${link}`;
}

/**
 * Reads a batch of events for one request (those after `startSeq`): the last tool step, the PR
 * link, and whether the run reached a point where the request is answered (done, failed,
 * stopped, or a question).
 */
export function readBatch(events: StoredEvent[], startSeq: number, status: SessionRecord['status']) {
  let step: ProgressView['step'];
  const blocked: string[] = [];
  const refused: string[] = [];
  const notices: string[] = [];
  let prUrl: string | undefined;
  let queue: string | undefined;
  let settled = false;
  const asked: { id: string; text: string }[] = [];
  const answered: string[] = [];
  for (const { seq, event } of events) {
    if (seq <= startSeq) continue;
    if (event.type === 'tool-start') step = { name: event.name, input: event.input };
    if (event.type === 'pr-opened') prUrl = event.url;
    if (event.type === 'question-asked') asked.push({ id: event.questionId, text: event.question });
    if (event.type === 'question-answered') answered.push(event.questionId);
    if (event.type === 'queue-waiting' || event.type === 'queue-started') queue = queueNotice(event);
    if (event.type === 'model-waiting') queue = modelWaitNotice(event);
    if (event.type === 'egress-blocked' && !blocked.includes(describeEgressBlock(event)))
      blocked.push(describeEgressBlock(event));
    if (event.type === 'repo-refused') refused.push(repoRefusedNotice(event));
    if (event.type === 'publish-notice') notices.push(event.text);
    if (event.type === 'mode-chosen') notices.push(modeNotice(event));
    if (event.type === 'status-changed' && event.to === status && settledStatuses.has(event.to)) settled = true;
  }
  return {
    ...(step && { step }),
    ...(prUrl && { prUrl }),
    ...(queue && { queue }),
    blocked,
    refused,
    notices,
    settled,
    asked,
    answered,
  };
}

function describeStep(step: { name: string; input: unknown }): string {
  const { detail } = describeToolCall(step.name, step.input, { maxDetail: 120 });
  return detail ? `\`${step.name}\` ${inlineCode(detail)}` : `\`${step.name}\``;
}

function inlineCode(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

function quote(text: string): string {
  return text
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
