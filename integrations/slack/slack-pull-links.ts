import { type FamilyMember, familyPulls, renderFamilyPulls } from '../../src/core/session-family.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import { truncate } from './slack-blocks.ts';
import { escapeMrkdwn } from './slack-text.ts';

/**
 * For a parent that opened no pull request of its own (its sub-tasks were all on other
 * repositories): the ones its sub-tasks opened, in the same words. Undefined when there are none.
 */
export function subtaskPullsText(session: SessionRecord, family: readonly FamilyMember[]): string | undefined {
  if (family[0]?.sessionId !== session.id) return undefined;
  const pulls = familyPulls(family);
  const first = pulls[0];
  if (!first) return undefined;
  return renderFamilyPulls(pulls, slackLink) ?? `Pull request: ${first.url}`;
}

/**
 * An answer (ask mode) as it is posted: its own message, not a quote under "Finished", with the
 * harness's Markdown file links as Slack links and everything else escaped.
 */
export function answerText(answer: string): string {
  const parts = answer.trim().split(/(\[[^\]\n]+\]\(https?:\/\/[^)\s]+\))/);
  const text = parts
    .map((part) => {
      const link = /^\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)$/.exec(part);
      return link ? slackLink(link[2]!, escapeMrkdwn(link[1]!.replace(/\|/g, '/'))) : escapeMrkdwn(part);
    })
    .join('');
  return `:speech_balloon: ${truncate(text, 3500)}`;
}

function slackLink(url: string, text: string): string {
  return `<${url}|${text}>`;
}

/** "Pull request: <url>", or for a parent whose family opened more, every one of them. */
export function pullsText(session: SessionRecord, prUrl: string, family: readonly FamilyMember[]): string {
  const parent = family[0]?.sessionId === session.id;
  const all = parent
    ? renderFamilyPulls(familyPulls(family, { sessionId: session.id, url: prUrl, repo: session.repo }), slackLink)
    : undefined;
  return all ?? `Pull request: ${prUrl}`;
}
