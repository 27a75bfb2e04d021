import { z } from 'zod';
import type { Actor } from '../core/actor.ts';
import { SessionStatus } from '../core/session-status.ts';

/** Who is speaking through the API. Without an author the caller is the anonymous "API user". */
export const Author = z.object({
  name: z.string().trim().min(1).max(200),
  email: z.email().optional(),
});
export type Author = z.infer<typeof Author>;

export const CreateSessionBody = z.object({
  repo: z.string().trim().min(1).max(500),
  prompt: z.string().trim().min(1).max(100_000),
  baseBranch: z.string().trim().min(1).max(255).optional(),
  author: Author.optional(),
});

export const SendMessageBody = z.object({
  text: z.string().trim().min(1).max(100_000),
  /** Set when the message answers the question the agent asked. */
  questionId: z.string().min(1).optional(),
  author: Author.optional(),
});

export const StopBody = z.object({ author: Author.optional() }).optional();

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).optional(),
  status: SessionStatus.optional(),
  repo: z.string().min(1).max(500).optional(),
});

export const DiffQuery = z.object({ commit: z.string().regex(/^[0-9a-f]{7,64}$/, 'a commit SHA').optional() });

/** A sequence number to resume after: `?after=` or the `Last-Event-ID` header. */
export const SeqParam = z.coerce.number().int().nonnegative();

export const EventsQuery = z.object({
  after: SeqParam.optional(),
  format: z.enum(['json', 'sse']).optional(),
});

export function actorFrom(author: Author | undefined): Actor {
  return {
    source: 'web',
    id: author?.email ?? 'api',
    name: author?.name ?? 'API user',
    ...(author?.email && { email: author.email }),
  };
}
