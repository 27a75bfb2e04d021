import { approvalNotice } from '../core/approval-notice.ts';
import { autonomyNotice } from '../core/autonomy.ts';
import { modelWaitNotice } from '../core/model-notice.ts';
import { queueNotice } from '../core/queue-notice.ts';
import { describeEgressBlock } from '../core/egress-block.ts';
import { egressAllowNotice } from '../core/egress-allow.ts';
import { repoRefusedNotice } from '../core/repo-access.ts';
import type { EventOf, StoredEvent } from '../core/events.ts';
import { describeToolCall } from '../core/tool-call.ts';
import { describeGate } from '../core/evidence.ts';
import { modeNotice } from '../core/session-mode.ts';

/** One line (or a few) for a session event in a terminal; undefined for events not worth a line. */
export function renderEvent({ event }: StoredEvent): string | undefined {
  switch (event.type) {
    case 'session-created':
      return `● Session on ${event.repo}, requested by ${event.actor.name}`;
    case 'thread-added':
      return `  also followed in ${event.thread.source}`;
    case 'user-message':
      return `» ${event.actor.name}: ${indent(event.text)}`;
    case 'assistant-message':
      return `◆ ${indent(event.text)}`;
    case 'tool-start':
      return `  → ${event.name} ${describeToolCall(event.name, event.input, { maxDetail: 120 }).detail}`;
    case 'tool-end':
      return event.isError
        ? `  ✗ ${event.name} failed: ${firstLine(event.output)}`
        : `  ✓ ${event.name} (${Math.round(event.durationMs)} ms)`;
    case 'question-asked':
      return renderQuestion(event);
    case 'question-answered':
      return `  answered by ${event.actor.name}`;
    case 'approval-requested':
    case 'approval-decided':
      return `  ${approvalNotice(event)}`;
    case 'autonomy-set':
    case 'plan-approved':
    case 'mode-chosen':
    case 'task-routed':
      return `  ${howItWorks(event)}`;
    case 'status-changed':
      return statusLine(event);
    case 'workspace-ready':
      return `  workspace on branch ${event.branch}, from ${event.baseBranch} at ${event.baseCommit.slice(0, 12)}`;
    case 'diff-updated':
      return event.stat ? `  ${indent(event.stat)}` : undefined;
    case 'check-finished':
      return renderCheck(event);
    case 'verification-finished':
      return `  verification of ${event.commit.slice(0, 12)}: ${event.outcome}${event.total !== undefined ? ` ${event.total}/8` : ''}: ${event.summary}`;
    case 'review-gate':
      return `${event.ready ? '✓ ' : '  '}${describeGate(event)}`;
    case 'knowledge-loaded':
      return `  repo knowledge (${event.source}${event.rebuilt ? ', rebuilt' : ''}): setup ${event.setup.join(', ') || 'none'}; checks ${event.checks.join(', ') || 'none'}`;
    case 'budget-reached':
      return `  ${event.kind} budget reached: ${event.spent} of ${event.limit}`;
    case 'ci-failed':
      return `  CI failed on ${event.commit.slice(0, 12)}: ${event.name}${event.followUp ? ' (follow-up started)' : event.reason ? ` (${event.reason})` : ''}`;
    case 'branch-pushed':
      return `✓ pushed ${event.branch} at ${event.commit.slice(0, 12)} to ${event.remote}`;
    case 'pr-opened':
      return `✓ pull request #${event.number}: ${event.url}`;
    case 'ui-screenshots':
      return `  before/after screenshots of ${event.pages.map((p) => p.url).join(', ')}`;
    case 'usage':
      return undefined;
    case 'context-compacted':
      return `  (compacted ${event.messagesReplaced} earlier messages into a summary)`;
    case 'error':
      return `✗ ${event.message}`;
    case 'egress-blocked':
      return `  ⊘ network access refused: ${describeEgressBlock(event)}`;
    case 'egress-allowed':
    case 'egress-revoked':
      return `  ${egressAllowNotice(event)}`;
    case 'run-resumed':
      return `  (${event.reason})`;
    case 'queue-waiting':
    case 'queue-started':
    case 'model-waiting':
    case 'publish-notice':
      return waitingLine(event);
    case 'subtasks-spawned':
    case 'subtask-ended':
    case 'repo-refused':
      return subtaskLine(event);
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

/** How the session works: its mode, class and autonomy, and a plan's go. */
function howItWorks(event: EventOf<'autonomy-set' | 'plan-approved' | 'mode-chosen' | 'task-routed'>): string {
  if (event.type === 'mode-chosen') return modeNotice(event);
  if (event.type === 'task-routed') return `task class ${event.taskClass}: ${event.reason}`;
  return autonomyNotice(event);
}

/** A status change; a failure's reason is its error event's line (said once), not repeated here. */
function statusLine(event: EventOf<'status-changed'>): string {
  return `  status: ${event.from} → ${event.to}${event.reason && event.to !== 'failed' ? ` (${event.reason})` : ''}`;
}

/** Where the session waits (in line, on the model service) and what it is told before its pull request opens. */
function waitingLine(event: EventOf<'queue-waiting' | 'queue-started' | 'model-waiting' | 'publish-notice'>): string {
  switch (event.type) {
    case 'queue-waiting':
    case 'queue-started':
      return `  ${queueNotice(event)}`;
    case 'model-waiting':
      return `  ${modelWaitNotice(event)}`;
    case 'publish-notice':
      return `  ⓘ ${event.text}`;
    default:
      return event satisfies never;
  }
}

/** The sub-tasks a call started, one that ended, or a repository refused to them. */
function subtaskLine(event: EventOf<'subtasks-spawned' | 'subtask-ended' | 'repo-refused'>): string {
  switch (event.type) {
    case 'subtasks-spawned':
      return `  sub-tasks started: ${event.children.map((c) => `${c.index}. ${c.title} (${c.branch})`).join('; ')}`;
    case 'subtask-ended':
      return `  sub-task ${event.index} ${event.status}`;
    case 'repo-refused':
      return `  ⊘ ${repoRefusedNotice(event)}`;
    default:
      return event satisfies never;
  }
}

/** The question, then its choices and the recommended one when it has them. */
function renderQuestion(event: EventOf<'question-asked'>): string {
  const choices = event.choices?.length ? `\n  choices: ${event.choices.join(' | ')}` : '';
  const recommended = event.recommended ? ` (recommended: ${event.recommended})` : '';
  return `? ${event.question}${choices}${recommended}`;
}

/** A check's phase, name, command and commit, then its outcome with the exit code and reason when known. */
function renderCheck(event: EventOf<'check-finished'>): string {
  const exit = event.exitCode !== null ? `, exit ${event.exitCode}` : '';
  const reason = event.reason ? ` (${event.reason})` : '';
  return `  ${event.phase} ${event.name} (${event.command}) on ${event.commit.slice(0, 12)}: ${event.outcome}${exit}${reason}`;
}

function firstLine(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}

function indent(text: string, prefix = '  '): string {
  return text.trim().split('\n').join(`\n${prefix}`);
}
