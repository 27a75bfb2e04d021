import { quoteUntrusted } from '../../src/core/quote-untrusted.ts';
import type { AgentSessionEvent } from './linear-webhook.ts';

/**
 * The task for a `created` agent session: who asked and how (delegation or a mention), the issue
 * (identifier, title, link) and then, quoted as their authors' words, the mentioning comment,
 * the issue description and the context Linear assembled (`promptContext`, team guidance).
 */
export function taskFromEvent(event: AgentSessionEvent, issueAuthor?: string): string {
  const session = event.agentSession;
  const issue = session.issue;
  const requester = session.creator?.name ?? 'Someone';
  const parts: string[] = [];
  const comment = session.comment?.body?.trim();
  const byRequester = comment !== undefined && session.comment?.userId != null && session.comment.userId === session.creator?.id;
  if (issue) {
    // The title is the issue author's words, not the requester's: it goes in the quote below, never
    // inside this sentence.
    parts.push(
      comment && byRequester
        ? `${requester} mentioned you on Linear issue ${issue.identifier} (${issue.url}). Their request:\n\n${comment}`
        : `${requester} delegated Linear issue ${issue.identifier} (${issue.url}) to you. Resolve the issue.`,
    );
    if (comment && !byRequester) parts.push(quoteUntrusted({ what: `The comment on ${issue.identifier} that started this session`, author: 'another Linear user', body: comment }));
    parts.push(
      quoteUntrusted({
        what: `The title and description of Linear issue ${issue.identifier}`,
        author: issueAuthor ? `${issueAuthor} (Linear)` : "the issue's author (Linear)",
        title: issue.title,
        body: issue.description ?? '',
      }),
    );
  } else {
    parts.push(comment ? `${requester} asked on Linear:\n\n${comment}` : `${requester} started a Linear agent session.`);
  }
  if (event.promptContext?.trim()) {
    parts.push(quoteUntrusted({ what: 'The context Linear assembled for this session (issue details and comments)', author: 'various Linear users', body: event.promptContext }));
  }
  const guidance = (event.guidance ?? []).map((g) => g.body.trim()).filter(Boolean);
  if (guidance.length) parts.push(quoteUntrusted({ what: 'Team guidance for agents', author: 'the Linear workspace administrators', body: guidance.join('\n\n') }));
  return parts.join('\n\n');
}
