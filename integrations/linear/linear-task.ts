import type { QuotedSource } from '../../src/core/attachment.ts';
import { quoteUntrusted } from '../../src/core/quote-untrusted.ts';
import type { AgentSessionEvent } from './linear-webhook.ts';

/** A comment of the issue's thread as the webhook carries it. */
export type ThreadComment = { id?: string; body: string; userId?: string | null };

/**
 * The comment that mentioned the agent, from a `created` event. Linear's types say where each part
 * of a comment thread is: `agentSession.comment` is the thread's ROOT comment ("The root comment of
 * the thread this agent session is attached to"), `previousComments` the thread's comments before
 * the mention ("Present only for created events where the session was initiated by mentioning the
 * agent in a child comment of a thread"), and `agentActivity` the session's first prompt, the
 * mention itself, linked to its comment by `sourceCommentId`. Without that activity the root is the
 * mention only when nothing came before it; a delegation has no mention at all.
 */
export function mentionOf(event: AgentSessionEvent): ThreadComment | undefined {
  const activity = event.agentActivity;
  const prompt = activity?.content.type === 'prompt' ? activity.content.body?.trim() : undefined;
  if (event.action === 'created' && activity && prompt) {
    return {
      body: prompt,
      userId: activity.userId ?? activity.user?.id ?? null,
      ...(activity.sourceCommentId && { id: activity.sourceCommentId }),
    };
  }
  const root = event.agentSession.comment;
  if (root?.body.trim() && !event.previousComments?.length)
    return { id: root.id, body: root.body.trim(), userId: root.userId ?? null };
  return undefined;
}

/** The thread's other comments, the root first: context for the mention, never the request. */
export function threadContextOf(event: AgentSessionEvent, mention: ThreadComment | undefined): ThreadComment[] {
  const root = event.agentSession.comment;
  const comments: ThreadComment[] = [
    ...(root ? [{ id: root.id, body: root.body, userId: root.userId ?? null }] : []),
    ...(event.previousComments ?? []).map((c) => ({
      ...(c.id !== undefined && { id: String(c.id) }),
      body: c.body,
      userId: c.userId ?? null,
    })),
  ];
  const seen = new Set<string>();
  return comments.filter((c) => {
    if (!c.body.trim()) return false;
    if (
      mention &&
      ((mention.id !== undefined && c.id === mention.id) ||
        (mention.id === undefined && c.body.trim() === mention.body))
    )
      return false;
    if (c.id !== undefined) {
      if (seen.has(c.id)) return false;
      seen.add(c.id);
    }
    return true;
  });
}

/**
 * The task for a `created` agent session: who asked and how (delegation or a mention), the issue
 * (identifier, title, link), the mentioning comment as the request when the requester wrote it, and
 * then, quoted as their authors' words, the rest of the comment thread, the issue description and
 * the context Linear assembled (`promptContext`, team guidance).
 */
export function taskFromEvent(event: AgentSessionEvent, issueAuthor?: string): string {
  const session = event.agentSession;
  const issue = session.issue;
  const requester = session.creator?.name ?? 'Someone';
  const parts: string[] = [];
  const mention = mentionOf(event);
  const byRequester = mention !== undefined && mention.userId != null && mention.userId === session.creator?.id;
  if (issue) {
    // The title is the issue author's words, not the requester's: it goes in the quote below, never
    // inside this sentence.
    parts.push(
      mention && byRequester
        ? `${requester} mentioned you on Linear issue ${issue.identifier} (${issue.url}). Their request:\n\n${mention.body}`
        : `${requester} delegated Linear issue ${issue.identifier} (${issue.url}) to you. Resolve the issue.`,
    );
    if (mention && !byRequester)
      parts.push(
        quoteUntrusted({
          what: `The comment on ${issue.identifier} that started this session`,
          author: 'another Linear user',
          body: mention.body,
        }),
      );
    parts.push(
      quoteUntrusted({
        what: `The title and description of Linear issue ${issue.identifier}`,
        author: issueAuthor ? `${issueAuthor} (Linear)` : "the issue's author (Linear)",
        title: issue.title,
        body: issue.description ?? '',
      }),
    );
  } else {
    parts.push(
      mention ? `${requester} asked on Linear:\n\n${mention.body}` : `${requester} started a Linear agent session.`,
    );
  }
  const thread = threadContextOf(event, mention);
  if (thread.length) {
    const where = issue ? ` on ${issue.identifier}` : '';
    const body = thread
      .map(
        (c) =>
          `${c.userId != null && c.userId === session.creator?.id ? `${requester}` : 'Another Linear user'} wrote:\n${c.body.trim()}`,
      )
      .join('\n\n');
    parts.push(
      quoteUntrusted({
        what: `The earlier comments of the thread${where} (the root comment first)`,
        author: "the thread's participants (Linear)",
        body,
      }),
    );
  }
  if (event.promptContext?.trim()) {
    parts.push(
      quoteUntrusted({
        what: 'The context Linear assembled for this session (issue details and comments)',
        author: 'various Linear users',
        body: event.promptContext,
      }),
    );
  }
  const guidance = (event.guidance ?? []).map((g) => g.body.trim()).filter(Boolean);
  if (guidance.length)
    parts.push(
      quoteUntrusted({
        what: 'Team guidance for agents',
        author: 'the Linear workspace administrators',
        body: guidance.join('\n\n'),
      }),
    );
  return parts.join('\n\n');
}

/**
 * For a `created` session's pictures: the requester's own words (their mention), and the texts
 * others wrote that the task quotes (the issue's description, another person's mention, the thread,
 * Linear's context), so a picture in those is attributed to its author, not taken as the requester's.
 */
export function quotedSources(event: AgentSessionEvent): { own: string; others: QuotedSource[] } {
  const session = event.agentSession;
  const where = session.issue ? `Linear issue ${session.issue.identifier}` : 'Linear';
  const mention = mentionOf(event);
  const byRequester = mention?.userId != null && mention.userId === session.creator?.id;
  const byOthers = threadContextOf(event, mention).filter((c) => c.userId == null || c.userId !== session.creator?.id);
  const others: QuotedSource[] = [
    ...(session.issue ? [{ author: "the issue's author", where, text: session.issue.description ?? '' }] : []),
    ...(mention && !byRequester ? [{ author: 'another Linear user', where, text: mention.body }] : []),
    ...byOthers.map((c) => ({ author: 'another Linear user', where, text: c.body })),
    ...(event.promptContext ? [{ author: 'various Linear users', where, text: event.promptContext }] : []),
  ];
  return { own: mention && byRequester ? mention.body : '', others };
}
