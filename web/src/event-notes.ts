/**
 * The one-line notes the session page's timeline shows for events that are not part of the
 * conversation: where the session started, its workspace, checks, verdicts, pushes, the pull
 * request, budgets and errors. Every type in `noteTypes` has its note here (the compiler checks).
 */
import { describeGate } from '../../src/core/evidence.ts';
import type { EventOf, SessionEvent } from '../../src/core/events.ts';
import { modelWaitNotice } from '../../src/core/model-notice.ts';
import { queueNotice } from '../../src/core/queue-notice.ts';
import { approvalNotice } from '../../src/core/approval-notice.ts';
import { autonomyNotice } from '../../src/core/autonomy.ts';
import { egressAllowNotice } from '../../src/core/egress-allow.ts';
import { repoRefusedNotice } from '../../src/core/repo-access.ts';
import { modeNotice } from '../../src/core/session-mode.ts';
import { approvalTone } from './approval-state.ts';

export type Note = { tone: 'info' | 'good' | 'bad'; text: string; link?: { href: string; label: string } };

const noteTypes = [
  'session-created',
  'thread-added',
  'workspace-ready',
  'diff-updated',
  'check-finished',
  'verification-finished',
  'review-gate',
  'knowledge-loaded',
  'task-routed',
  'budget-reached',
  'ci-failed',
  'branch-pushed',
  'pr-opened',
  'context-compacted',
  'error',
  'run-resumed',
  'queue-waiting',
  'queue-started',
  'model-waiting',
  'approval-requested',
  'approval-decided',
  'autonomy-set',
  'plan-approved',
  'egress-allowed',
  'egress-revoked',
  'repo-refused',
  'publish-notice',
  'mode-chosen',
] as const;

/** An event the timeline shows as a note. */
export type NoteEvent = EventOf<(typeof noteTypes)[number]>;

const isNote = new Set<string>(noteTypes);

export function isNoteEvent(event: SessionEvent): event is NoteEvent {
  return isNote.has(event.type);
}

const info = (text: string): Note => ({ tone: 'info', text });

/** The note an event shows as. */
export function noteOf(event: NoteEvent): Note {
  switch (event.type) {
    case 'session-created':
      return info(`Session started by ${event.actor.name} from ${event.thread.source} on ${event.repo}`);
    case 'thread-added':
      return info(`Also followed in ${event.thread.source}`);
    case 'workspace-ready':
      return info(`Workspace ready on ${event.branch}, from ${event.baseBranch} at ${event.baseCommit.slice(0, 10)}`);
    case 'diff-updated':
      return info(`${event.filesChanged} file${event.filesChanged === 1 ? '' : 's'} changed`);
    case 'knowledge-loaded':
      return info(
        `Repository knowledge ${event.rebuilt ? 'built' : 'loaded'} (${event.source}): setup ${event.setup.join(', ') || 'none'}; checks ${event.checks.join(', ') || 'none'}`,
      );
    case 'task-routed':
      return info(
        `Routed as ${event.taskClass}: ${event.reason} (budget $${event.maxCostUsd}, ${event.maxMinutes} min)`,
      );
    case 'context-compacted':
      return info(`Compacted ${event.messagesReplaced} earlier messages into a summary`);
    case 'error':
      return { tone: 'bad', text: event.message };
    case 'run-resumed':
      return info(`Resumed: ${event.reason}`);
    case 'queue-waiting':
    case 'queue-started':
      return info(queueNotice(event));
    case 'model-waiting':
      return info(modelWaitNotice(event));
    case 'approval-requested':
    case 'approval-decided':
      return { tone: approvalTone(event), text: approvalNotice(event) };
    case 'autonomy-set':
      return info(autonomyNotice(event));
    case 'plan-approved':
      return { tone: 'good', text: autonomyNotice(event) };
    case 'egress-allowed':
    case 'egress-revoked':
      return { tone: event.type === 'egress-allowed' ? 'good' : 'info', text: egressAllowNotice(event) };
    case 'repo-refused':
      return { tone: 'bad', text: repoRefusedNotice(event) };
    case 'publish-notice':
      return info(event.text);
    case 'mode-chosen':
      return info(modeNotice(event));
    default:
      return progressNote(event);
  }
}

/** The notes of a run's progress towards its pull request, and of what stopped it. */
function progressNote(
  event: EventOf<
    | 'check-finished'
    | 'verification-finished'
    | 'review-gate'
    | 'budget-reached'
    | 'ci-failed'
    | 'branch-pushed'
    | 'pr-opened'
  >,
): Note {
  switch (event.type) {
    case 'check-finished': {
      const what = event.phase === 'setup' ? `Setup ${event.name}` : `Check ${event.name}`;
      const reason = event.reason ? `: ${event.reason}` : '';
      return { tone: toneOf(event.outcome), text: `${what} ${event.outcome} on ${event.commit.slice(0, 10)}${reason}` };
    }
    case 'verification-finished': {
      const total = event.total === undefined ? '' : ` (${event.total}/8)`;
      const text = `Verifier ${event.outcome}${total} on ${event.commit.slice(0, 10)}: ${event.summary}`;
      return { tone: toneOf(event.outcome), text };
    }
    case 'review-gate':
      return {
        tone: event.ready ? 'good' : 'info',
        text: describeGate(event, 10).replace(/^./, (c) => c.toUpperCase()),
      };
    case 'budget-reached':
      return {
        tone: 'bad',
        text:
          event.kind === 'cost'
            ? `Spent $${event.spent.toFixed(2)} of the $${event.limit.toFixed(2)} budget`
            : `Ran ${Math.round(event.spent)} of ${Math.round(event.limit)} minutes allowed`,
      };
    case 'ci-failed': {
      const after = event.followUp ? ' (following up)' : event.reason ? ` (${event.reason})` : '';
      const text = `CI failed on #${event.pullNumber} at ${event.commit.slice(0, 10)}: ${event.name}${after}`;
      return { tone: 'bad', text, ...(event.url && { link: { href: event.url, label: 'details' } }) };
    }
    case 'branch-pushed':
      return { tone: 'good', text: `Pushed ${event.branch} at ${event.commit.slice(0, 10)}` };
    case 'pr-opened':
      return { tone: 'good', text: `Pull request #${event.number}`, link: { href: event.url, label: event.url } };
    default:
      // Every progress type is handled above (the compiler proves it).
      return event satisfies never;
  }
}

function toneOf(outcome: 'passed' | 'failed' | 'timed-out' | 'not-run'): Note['tone'] {
  return outcome === 'passed' ? 'good' : outcome === 'not-run' ? 'info' : 'bad';
}
