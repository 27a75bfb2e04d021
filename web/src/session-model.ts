/**
 * What the session page shows, folded from the session's event log (and its live, unstored text).
 * Every SessionEvent type is handled in `fold` or has a note (event-notes.ts): a new one fails
 * `npm run typecheck` until the page knows what to do with it. Items are replaced, never mutated,
 * so views can skip unchanged ones.
 */
import type { AttachmentRef } from '../../src/core/attachment.ts';
import type { Actor } from '../../src/core/actor.ts';
import type { EventOf, SessionEvent, StoredEvent } from '../../src/core/events.ts';
import type { LiveEvent } from '../../src/core/live-events.ts';
import type { SessionStatus } from '../../src/core/session-status.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import { isNoteEvent, noteOf, type Note } from './event-notes.ts';
import { nextOpenApprovals, type OpenApproval } from './approval-state.ts';

export type ToolEnd = { isError: boolean; output: string; durationMs: number; at: string };

export type Item =
  | {
      kind: 'user';
      key: string;
      at: string;
      actor: Actor;
      text: string;
      answers?: string;
      /** Pictures the person attached (kept as artifacts of the session). */
      attachments?: AttachmentRef[];
    }
  | { kind: 'assistant'; key: string; at: string; turn: number; text: string }
  | { kind: 'streaming'; key: string; turn: number; text: string; partial: boolean }
  | { kind: 'tool'; key: string; at: string; callId: string; name: string; input: unknown; end?: ToolEnd }
  | {
      kind: 'question';
      key: string;
      at: string;
      questionId: string;
      question: string;
      choices: string[];
      recommended?: string;
      answer?: { actor: Actor; text: string };
    }
  | { kind: 'egress'; key: string; at: string; host: string; port: number; reason: string }
  | { kind: 'status'; key: string; at: string; from: SessionStatus; to: SessionStatus; reason?: string }
  /** Before/after screenshots of a UI change; each side an artifact id. */
  | { kind: 'screenshots'; key: string; at: string; pages: EventOf<'ui-screenshots'>['pages'] }
  | {
      kind: 'note';
      key: string;
      at: string;
      tone: 'info' | 'good' | 'bad';
      text: string;
      link?: { href: string; label: string };
    };

export type CheckRun = Omit<EventOf<'check-finished'>, 'type'> & { key: string; at: string };
export type Verdict = Omit<EventOf<'verification-finished'>, 'type'> & { key: string; at: string };
export type ReviewGate = Omit<EventOf<'review-gate'>, 'type'> & { key: string; at: string };
export type CiFailure = Omit<EventOf<'ci-failed'>, 'type'> & { key: string; at: string };
export type Push = { branch: string; commit: string; remote: string; at: string };

export class SessionModel {
  lastSeq = 0;
  /** Bumped on every change, so views know to render again. */
  version = 0;
  items: Item[] = [];
  status: SessionStatus | undefined;
  workspace: { branch: string; baseBranch: string; baseCommit: string } | undefined;
  pushes: Push[] = [];
  pr: { url: string; number: number; commit: string } | undefined;
  checks: CheckRun[] = [];
  verdicts: Verdict[] = [];
  gates: ReviewGate[] = [];
  ciFailures: CiFailure[] = [];
  knowledge: EventOf<'knowledge-loaded'> | undefined;
  route: EventOf<'task-routed'> | undefined;
  /** The autonomy the latest run worked under, shown in the session header. */
  autonomy: EventOf<'autonomy-set'> | undefined;
  participants = new Map<string, Actor>();
  threads: ThreadRef[] = [];
  models = new Set<string>();
  /**
   * The questions not answered yet, oldest first: a session's own, or, on a parent's page, one per
   * sub-task that asks (each answered for its own sub-task).
   */
  openQuestions: string[] = [];
  /** The held commands waiting for a decision, oldest first (a parent's holds its sub-tasks' too). */
  openApprovals: OpenApproval[] = [];
  private tools = new Map<string, number>();
  private questions = new Map<string, number>();
  private streaming = new Map<number, number>();
  private finishedTurns = new Set<number>();
  /** The stored events folded so far, oldest first: a page before them folds everything again. */
  private log: StoredEvent[] = [];

  /** The open questions with their words, oldest first: what the message box may answer. */
  get openQuestionList(): { questionId: string; question: string }[] {
    return this.openQuestions.flatMap((questionId) => {
      const index = this.questions.get(questionId);
      const item = index === undefined ? undefined : this.items[index];
      return item?.kind === 'question' ? [{ questionId, question: item.question }] : [];
    });
  }

  /** Applies a stored event once: events at or below the last seq seen are ignored (replays, reconnects). */
  apply(stored: StoredEvent): boolean {
    if (stored.seq <= this.lastSeq) return false;
    this.lastSeq = stored.seq;
    this.version++;
    this.log.push(stored);
    this.fold(stored.event, `e${stored.seq}`, stored.at);
    return true;
  }

  /** The seq of the oldest stored event folded, if any. */
  get firstSeq(): number | undefined {
    return this.log[0]?.seq;
  }

  /**
   * Adds events from before the oldest one held (a page read as the reader scrolls up) and folds
   * the whole log again, so a tool call or a question whose start was on the older page joins its
   * end. Text still streaming stays at the end. Events not older than the oldest held are ignored.
   */
  prepend(older: readonly StoredEvent[]): boolean {
    const first = this.firstSeq ?? Number.POSITIVE_INFINITY;
    const earlier = older.filter((stored) => stored.seq < first);
    if (earlier.length === 0) return false;
    const log = [...earlier, ...this.log];
    const streaming = this.items.filter((item) => item.kind === 'streaming');
    const version = this.version;
    // Every field back to where a new model starts, then the log folded in order.
    Object.assign(this, new SessionModel());
    for (const stored of log) this.apply(stored);
    for (const item of streaming) {
      this.streaming.set(item.turn, this.items.length);
      this.items.push(item);
    }
    this.version = version + 1;
    return true;
  }

  /** Applies streamed text. Ignored once the turn's stored message is in. */
  applyLive(event: LiveEvent): boolean {
    switch (event.type) {
      case 'assistant-delta': {
        if (this.finishedTurns.has(event.turn)) return false;
        const index = this.streaming.get(event.turn);
        const current = index === undefined ? undefined : this.items[index];
        if (current?.kind === 'streaming') {
          // A chunk may arrive twice or out of place after a reconnect: keep the text consistent.
          if (event.offset > current.text.length)
            this.items[index!] = { ...current, text: `${current.text}…${event.text}`, partial: true };
          else this.items[index!] = { ...current, text: current.text.slice(0, event.offset) + event.text };
        } else {
          this.streaming.set(event.turn, this.items.length);
          this.items.push({
            kind: 'streaming',
            key: `live${event.turn}`,
            turn: event.turn,
            text: event.text,
            partial: event.offset > 0,
          });
        }
        this.version++;
        return true;
      }
      default: {
        const _never: never = event.type;
        return _never;
      }
    }
  }

  private push(item: Item) {
    this.items.push(item);
  }

  private note(key: string, at: string, { tone, text, link }: Note) {
    this.push({ kind: 'note', key, at, tone, text, ...(link && { link }) });
  }

  private endTurn(turn: number) {
    this.finishedTurns.add(turn);
    const index = this.streaming.get(turn);
    if (index === undefined) return;
    this.streaming.delete(turn);
    this.items.splice(index, 1);
    this.shiftIndexes(index + 1, -1);
  }

  /** Items at or after `from` moved by `by` places. */
  private shiftIndexes(from: number, by: number) {
    const shift = <K>(map: Map<K, number>) => {
      for (const [k, v] of map) if (v >= from) map.set(k, v + by);
    };
    shift(this.tools);
    shift(this.questions);
    shift(this.streaming);
  }

  /** A tool call's end goes on its start's item (or on its own when the start is on an older page). */
  private endTool(event: EventOf<'tool-end'>, key: string, at: string): void {
    const end = { isError: event.isError, output: event.output, durationMs: event.durationMs, at };
    const index = this.tools.get(event.callId);
    const item = index === undefined ? undefined : this.items[index];
    if (item?.kind === 'tool') this.items[index!] = { ...item, end };
    else this.push({ kind: 'tool', key, at, callId: event.callId, name: event.name, input: undefined, end });
  }

  private fold(event: SessionEvent, key: string, at: string): void {
    this.track(event, key, at);
    if (isNoteEvent(event)) {
      this.note(key, at, noteOf(event));
      return;
    }
    switch (event.type) {
      case 'user-message': {
        this.participants.set(actorKey(event.actor), event.actor);
        this.push({
          kind: 'user',
          key,
          at,
          actor: event.actor,
          text: event.text,
          ...(event.questionId && { answers: event.questionId }),
          ...(event.attachments?.length && { attachments: event.attachments }),
        });
        return;
      }
      case 'assistant-message': {
        const index = this.streaming.get(event.turn);
        this.endTurn(event.turn);
        const item: Item = { kind: 'assistant', key, at, turn: event.turn, text: event.text };
        // In the streamed text's place, so the page does not jump.
        if (index !== undefined) {
          this.shiftIndexes(index, 1);
          this.items.splice(index, 0, item);
        } else this.push(item);
        return;
      }
      case 'tool-start':
        this.tools.set(event.callId, this.items.length);
        this.push({ kind: 'tool', key, at, callId: event.callId, name: event.name, input: event.input });
        return;
      case 'tool-end':
        this.endTool(event, key, at);
        return;
      case 'question-asked':
        this.openQuestions = [...this.openQuestions.filter((id) => id !== event.questionId), event.questionId];
        this.questions.set(event.questionId, this.items.length);
        this.push({
          kind: 'question',
          key,
          at,
          questionId: event.questionId,
          question: event.question,
          choices: event.choices ?? [],
          ...(event.recommended && { recommended: event.recommended }),
        });
        return;
      case 'question-answered': {
        this.openQuestions = this.openQuestions.filter((id) => id !== event.questionId);
        const index = this.questions.get(event.questionId);
        const item = index === undefined ? undefined : this.items[index];
        if (item?.kind === 'question')
          this.items[index!] = { ...item, answer: { actor: event.actor, text: event.text } };
        return;
      }
      case 'status-changed': {
        const { from, to, reason } = event;
        // A failure's reason is its error note, shown once.
        this.push({ kind: 'status', key, at, from, to, ...(reason && to !== 'failed' && { reason }) });
        return;
      }
      case 'egress-blocked':
        this.push({ kind: 'egress', key, at, host: event.host, port: event.port, reason: event.reason });
        return;
      case 'ui-screenshots':
        this.push({ kind: 'screenshots', key, at, pages: event.pages });
        return;
      case 'usage':
      case 'subtasks-spawned':
      case 'subtask-ended':
        return;
      default:
        // Every known type is handled above or is a note (the compiler proves it); a newer server's is not shown.
        event satisfies never;
    }
  }

  /** What the side panel and the composer read: the session's state as of the events folded so far. */
  private track(event: SessionEvent, key: string, at: string): void {
    switch (event.type) {
      case 'session-created':
        this.participants.set(actorKey(event.actor), event.actor);
        this.threads.push(event.thread);
        return;
      case 'thread-added':
        this.threads.push(event.thread);
        return;
      case 'status-changed':
        this.status = event.to;
        if (event.to === 'completed' || event.to === 'failed' || event.to === 'cancelled') {
          this.openQuestions = [];
          this.openApprovals = [];
        }
        return;
      case 'workspace-ready':
        this.workspace = { branch: event.branch, baseBranch: event.baseBranch, baseCommit: event.baseCommit };
        return;
      case 'check-finished': {
        const { type: _type, ...run } = event;
        this.checks.push({ ...run, key, at });
        return;
      }
      case 'verification-finished': {
        const { type: _type, ...verdict } = event;
        this.verdicts.push({ ...verdict, key, at });
        return;
      }
      case 'review-gate': {
        const { type: _type, ...gate } = event;
        this.gates.push({ ...gate, key, at });
        return;
      }
      case 'ci-failed': {
        const { type: _type, ...failure } = event;
        this.ciFailures.push({ ...failure, key, at });
        return;
      }
      case 'knowledge-loaded':
        this.knowledge = event;
        return;
      case 'approval-requested':
      case 'approval-decided':
        this.openApprovals = nextOpenApprovals(this.openApprovals, event);
        return;
      case 'task-routed':
        this.route = event;
        return;
      case 'autonomy-set':
        this.autonomy = event;
        return;
      case 'branch-pushed':
        this.pushes.push({ branch: event.branch, commit: event.commit, remote: event.remote, at });
        return;
      case 'pr-opened':
        this.pr = { url: event.url, number: event.number, commit: event.commit };
        return;
      case 'usage':
        this.models.add(event.model);
        return;
    }
  }
}

function actorKey(actor: Actor): string {
  return `${actor.source}:${actor.id}`;
}
