import { z } from 'zod';
import type { Actor } from '../core/actor.ts';
import { SessionEvent, type SessionEventType } from '../core/events.ts';
import { SessionStatus } from '../core/session-status.ts';
import { isValidBranchName } from '../git/branch-name.ts';

/** Who is speaking through the API. Without an author the caller is the anonymous "API user". */
export const Author = z.object({
  name: z.string().trim().min(1).max(200),
  email: z.email().optional(),
});
export type Author = z.infer<typeof Author>;

export const CreateSessionBody = z.object({
  repo: z.string().trim().min(1).max(500),
  prompt: z.string().trim().min(1).max(100_000),
  baseBranch: z
    .string()
    .trim()
    .min(1)
    .max(255)
    .refine(isValidBranchName, 'is not a valid branch name (no spaces, "..", "~^:?*[\\", or leading "-")')
    .optional(),
  author: Author.optional(),
});

export const SendMessageBody = z.object({
  text: z.string().trim().min(1).max(100_000),
  /** Set when the message answers the question the agent asked. */
  questionId: z.string().min(1).optional(),
  author: Author.optional(),
  /** Pictures dropped on the page's message box: name and bytes in base64 (taken in by the image intake). */
  images: z
    .array(z.object({ name: z.string().trim().min(1).max(200), data: z.string().min(1) }))
    .max(20)
    .optional(),
});

export const StopBody = z.object({ author: Author.optional() }).optional();

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).optional(),
  status: SessionStatus.optional(),
  repo: z.string().min(1).max(500).optional(),
});

export const DiffQuery = z.object({
  commit: z
    .string()
    .regex(/^[0-9a-f]{7,64}$/, 'a commit SHA')
    .optional(),
});

/** A sequence number to resume after: `?after=` or the `Last-Event-ID` header. */
export const SeqParam = z.coerce.number().int().nonnegative();

const eventTypes = SessionEvent.options.map((option) => option.shape.type.value) as [
  SessionEventType,
  ...SessionEventType[],
];

/** The largest page `?limit=` may ask for. */
export const MAX_EVENT_PAGE = 1000;

/**
 * `?after=` (the whole log after a seq, or the stream from there), or a page: `?limit=` events
 * before `?before=` (the newest without it), newest page first. `?types=a,b` keeps only those types.
 */
export const EventsQuery = z
  .object({
    after: SeqParam.optional(),
    before: z.coerce
      .number({ error: 'before must be a sequence number' })
      .int('before must be a whole number')
      .positive('before must be 1 or more')
      .optional(),
    limit: z.coerce
      .number({ error: 'limit must be a number' })
      .int('limit must be a whole number')
      .min(1, 'limit must be 1 or more')
      .max(MAX_EVENT_PAGE, `limit must be at most ${MAX_EVENT_PAGE}`)
      .optional(),
    types: z
      .string()
      .transform((text) => text.split(',').map((t) => t.trim()))
      .pipe(z.array(z.enum(eventTypes, { error: (issue) => `${JSON.stringify(issue.input)} is not an event type` })))
      .optional(),
    format: z.enum(['json', 'sse']).optional(),
  })
  .refine((q) => q.after === undefined || (q.before === undefined && q.limit === undefined), {
    error: 'after reads forward (the whole log or the stream); before and limit page backwards: use one or the other',
  })
  .refine((q) => q.format !== 'sse' || (q.before === undefined && q.limit === undefined), {
    error: 'pages (before, limit) are JSON; the stream takes after',
  })
  .refine((q) => q.types === undefined || q.format === 'json' || q.before !== undefined || q.limit !== undefined, {
    error: 'types filters JSON reads (format=json or a page), not the stream',
  });

export function actorFrom(author: Author | undefined): Actor {
  return {
    source: 'web',
    id: author?.email ?? 'api',
    name: author?.name ?? 'API user',
    ...(author?.email && { email: author.email }),
  };
}
