import type { ToolExecutor } from '../agent/agent-runner.ts';
import { shellQuote } from '../agent/shell-quote.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { linkAnswer, referencedPaths, repoWebUrl } from '../core/answer-links.ts';
import type { EventOf } from '../core/events.ts';
import type { RunLog, TransitionResult } from '../core/run-log.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { type ModeChoice, nextMode, type SessionMode } from '../core/session-mode.ts';
import { isHuman } from './gates/harness-messages.ts';
import type { Autonomy } from '../core/autonomy.ts';
import { onlyReadOnly, planFirstGuidance } from './session-autonomy.ts';

/** What a tool that could change something answers in ask mode. */
export const ANSWER_ONLY =
  'Refused: this session answers a question and changes nothing. Use the read-only tools (read_file, list_files, search, git_status, git_diff) and answer in your final message. A person who wants the change will say so ("fix it").';

/** Events a change was made or published: a session that has them is a task, whatever its words. */
const WORK_DONE = new Set(['branch-pushed', 'pr-opened', 'diff-updated']);

/**
 * The run's mode: a sub-task, or a session that has already pushed work, changes code; otherwise
 * people's messages since the last choice decide (nextMode: the first request by its words, then
 * "fix it" turns an answer into a task). A new choice is recorded as `mode-chosen`, once per
 * message it follows (a resumed run finds it), so the thread is told which it is and why: an
 * answer, a forced "do:", and a turn from answer to task; a first request read as a change, the
 * way every request was read before, is not recorded, so such a thread reads as it always did.
 */
export async function settleMode(
  store: Pick<RunLog, 'events' | 'commitStep'>,
  session: Pick<SessionRecord, 'id' | 'parentId'>,
): Promise<SessionMode> {
  if (session.parentId) return 'do';
  const events = await store.events(session.id, {
    types: ['mode-chosen', 'user-message', 'branch-pushed', 'pr-opened', 'diff-updated'],
  });
  const chosen = events.findLast((e) => e.event.type === 'mode-chosen');
  const last = chosen?.event as EventOf<'mode-chosen'> | undefined;
  if (!last && events.some((e) => WORK_DONE.has(e.event.type))) return 'do';
  const current: ModeChoice | undefined = last && { mode: last.mode, source: last.source, reason: last.reason };
  const messages = events.filter(
    (e): e is typeof e & { event: EventOf<'user-message'> } =>
      e.seq > (chosen?.seq ?? 0) && e.event.type === 'user-message' && isHuman(e.event.actor),
  );
  const next = nextMode(
    current,
    messages.map((m) => m.event.text),
  );
  if (!next) return current?.mode ?? 'do';
  // A first request read as a change is what every session was before ask mode: nothing to tell.
  if (!current && next.mode === 'do' && next.source === 'router') return 'do';
  const after = messages.at(-1)?.seq ?? 0;
  await store.commitStep(session.id, {
    events: [{ event: { type: 'mode-chosen', ...next }, dedupeKey: `mode-chosen:${after}` }],
  });
  return next.mode;
}

/** The tools of a session that answers: the read-only ones, every other call refused with ANSWER_ONLY. */
export function answerOnly(tools: ToolExecutor): ToolExecutor {
  return onlyReadOnly(tools, ANSWER_ONLY);
}

/** The system block of a session that answers: read, then answer with the files and lines it rests on. */
export function answerGuidance(baseCommit: string): string {
  return [
    '# Answer only',
    'This request asks a question. Answer it; change nothing: no commit, no branch, no pull request.',
    'Explore with the read-only tools (read_file, list_files, search, git_status, git_diff); every other tool is refused.',
    `Your final message is the answer posted in the thread: short and direct. Name each file you rely on by its path from the repository root with its lines, as \`path/to/file.ts:12\` or \`path/to/file.ts:12-20\`; the harness links them at commit ${baseCommit.slice(0, 12)}.`,
    'If the person wants the change made, they will say so ("fix it"), and that run may change code.',
  ].join('\n');
}

/**
 * A finished answer: its file references linked at the commit the agent read (paths that exist
 * there only), and the session finished with the answer as its result. No commit, no push.
 */
export async function finishAnswer(
  store: Pick<RunLog, 'transition'>,
  run: { session: SessionRecord; sandbox: Sandbox; baseCommit: string; signal: AbortSignal },
  answer: string,
): Promise<TransitionResult> {
  const { session, sandbox, baseCommit, signal } = run;
  const web = repoWebUrl(session.repo);
  const text = answer.trim() || 'I have no answer to give.';
  const exists = web ? await existingPaths(sandbox, baseCommit, referencedPaths(text), signal) : new Set<string>();
  const linked = web ? linkAnswer(text, { exists, repoWeb: web, commit: baseCommit }) : text;
  return store.transition(session.id, 'finish', {
    reason: 'answered the question; nothing was changed',
    patch: { result: { summary: linked, answered: true }, error: null },
    unlessUnread: true,
  });
}

/** Which of `paths` are files at `commit` (read in the sandbox; an error links nothing). */
async function existingPaths(
  sandbox: Sandbox,
  commit: string,
  paths: readonly string[],
  signal: AbortSignal,
): Promise<Set<string>> {
  if (paths.length === 0 || !/^[0-9a-f]{7,64}$/.test(commit)) return new Set();
  const listed = await sandbox.exec(
    `git -c core.quotePath=false ls-tree -r --name-only -z ${commit} -- ${paths.map(shellQuote).join(' ')}`,
    { signal, timeoutMs: 30_000 },
  );
  if (listed.exitCode !== 0) return new Set();
  return new Set(listed.stdout.split('\0').filter(Boolean));
}

/**
 * What the agent's tools may do in a round: `answer` (ask mode) and `plan` (a plan-first session
 * before its go) only read; `free` is every tool.
 */
export type RoundTools = 'answer' | 'plan' | 'free';

/** The system blocks a round adds for its tools: the answer's or the plan's guidance. */
export function roundGuidance(level: Autonomy, tools: RoundTools, baseCommit: string): string[] {
  if (tools === 'answer') return [answerGuidance(baseCommit)];
  return level === 'plan-first' ? [planFirstGuidance(tools === 'plan')] : [];
}
