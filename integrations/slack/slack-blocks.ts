import type { RepoMention } from '../../src/core/repo-mentions.ts';
import { repoLabel } from './repo-choice.ts';
import { escapeMrkdwn } from './slack-text.ts';

/** Action ids of our buttons; the listeners match on these prefixes. */
export const ACTION = {
  answer: 'patchbay_answer',
  pickRepo: 'patchbay_pick_repo',
  stop: 'patchbay_stop',
  approve: 'patchbay_approve',
  deny: 'patchbay_deny',
  allowSession: 'patchbay_allow_session',
  allowRepository: 'patchbay_allow_repository',
} as const;

export const ASK_FOR_REPO =
  'Please paste the GitHub repository URL (private repositories work where the GitHub App is installed)';

export type SlackText = { text: string; blocks?: unknown[] };

type Button = {
  type: 'button';
  action_id: string;
  text: { type: 'plain_text'; text: string };
  value: string;
  style?: 'primary' | 'danger';
};

function button(actionId: string, label: string, value: string, style?: Button['style']): Button {
  return {
    type: 'button',
    action_id: actionId,
    text: { type: 'plain_text', text: truncate(label, 75) },
    value: truncate(value, 2000),
    ...(style && { style }),
  };
}

function section(text: string) {
  return { type: 'section', text: { type: 'mrkdwn', text: truncate(text, 3000) } };
}

/** Several repos named: list them, recommend one with the reason, and offer a button each. */
/** The value of the repository choice's "All of them" button. */
export const PICK_ALL_REPOS = 'all';

export function candidatesMessage(
  candidates: RepoMention[],
  pick: RepoMention,
  why: string,
  urlFor: (owner: string, repo: string) => string = (owner, repo) => `https://github.com/${owner}/${repo}`,
): SlackText {
  const lines = candidates.map(
    (c, i) =>
      `${i + 1}. <${urlFor(c.owner, c.repo)}|${escapeMrkdwn(repoLabel(c))}>${c === pick ? ' (recommended)' : ''}`,
  );
  const text = `Your message names ${candidates.length} repositories:\n${lines.join('\n')}\nI recommend *${escapeMrkdwn(repoLabel(pick))}*: ${why}. Which one should I work on? Click one, or reply with its name or number. *All of them* starts one session in ${escapeMrkdwn(repoLabel(pick))} that can hand the other repositories' work to sub-tasks, one pull request per repository.`;
  const buttons = candidates
    .slice(0, 25)
    .map((c, i) => button(`${ACTION.pickRepo}_${i}`, repoLabel(c), String(i), c === pick ? 'primary' : undefined));
  const all = button(`${ACTION.pickRepo}_all`, 'All of them', PICK_ALL_REPOS);
  return {
    text,
    blocks: [
      section(text),
      { type: 'actions', block_id: 'pick_repo', elements: buttons },
      { type: 'actions', block_id: 'pick_all_repos', elements: [all] },
    ],
  };
}

/** The agent's question as its own message, with a button per choice when it offered choices. */
export function questionMessage(input: {
  questionId: string;
  question: string;
  choices?: string[] | undefined;
  recommended?: string | undefined;
}): SlackText {
  const text = `:question: ${escapeMrkdwn(input.question)}`;
  const hint = input.choices?.length ? 'Click a choice or reply in this thread.' : 'Reply in this thread to answer.';
  const blocks: unknown[] = [section(text), { type: 'context', elements: [{ type: 'mrkdwn', text: hint }] }];
  if (input.choices?.length) {
    const elements = input.choices.slice(0, 25).map((choice, i) =>
      // The value names the question and the choice's index, never the choice itself: a choice may
      // be longer than the 2,000 characters a value holds, and a cut value would not parse.
      button(
        `${ACTION.answer}_${i}`,
        choice === input.recommended ? `${choice} (recommended)` : choice,
        answerValue(input.questionId, i),
        choice === input.recommended ? 'primary' : undefined,
      ),
    );
    blocks.push({ type: 'actions', block_id: 'answer', elements });
  }
  return { text, blocks };
}

/** A choice button's value: `{"q": questionId, "i": index}`. */
export function answerValue(questionId: string, index: number): string {
  return JSON.stringify({ q: questionId, i: index });
}

/** Reads a choice button's value; undefined when it is not one of ours. */
export function parseAnswerValue(value: string): { q: string; i: number } | undefined {
  try {
    const parsed = JSON.parse(value) as { q?: unknown; i?: unknown };
    return typeof parsed.q === 'string' && Number.isInteger(parsed.i)
      ? { q: parsed.q, i: parsed.i as number }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The question once answered: the buttons give way to who answered what. */
export function answeredMessage(question: string, who: string, answer: string): SlackText {
  const text = `:question: ${escapeMrkdwn(question)}\n:white_check_mark: ${escapeMrkdwn(who)} answered: ${escapeMrkdwn(truncate(answer, 500))}`;
  return { text, blocks: [section(text)] };
}

/** The status message, edited in place: what the run is doing now and for how long, with a Stop button while it runs. */
export function statusMessage(input: {
  repo: string;
  step: string;
  elapsed: string;
  link: string;
  active: boolean;
  /** Whether the message carries its Stop button (not when Slack shows its own); `active` by default. */
  stop?: boolean;
  icon: string;
  note?: string;
  /** The sub-tasks' lines (mrkdwn, already escaped), one per child session, under the status line. */
  subtasks?: string;
}): SlackText {
  const line = `${input.icon} *${escapeMrkdwn(input.repo)}*: ${input.step} · ${input.elapsed} · <${input.link}|session page>`;
  // The sub-tasks and the note (refused network access), both already escaped, go under the status line.
  const withSubtasks = input.subtasks ? `${line}\n${input.subtasks}` : line;
  const text = input.note ? `${withSubtasks}\n:no_entry_sign: ${input.note}` : withSubtasks;
  const blocks: unknown[] = [section(line)];
  if (input.subtasks) blocks.push(section(input.subtasks));
  if (input.note)
    blocks.push({
      type: 'context',
      elements: [{ type: 'mrkdwn', text: truncate(`:no_entry_sign: ${input.note}`, 3000) }],
    });
  if (input.stop ?? input.active)
    blocks.push({ type: 'actions', block_id: 'status', elements: [button(ACTION.stop, 'Stop', 'stop', 'danger')] });
  return { text, blocks };
}

export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** "1m 05s" */
export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}
