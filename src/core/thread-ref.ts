import { z } from 'zod';

/** Where a conversation lives. A session has one or more threads. */
export const ThreadRef = z.discriminatedUnion('source', [
  z.object({
    source: z.literal('slack'),
    teamId: z.string().min(1),
    channel: z.string().min(1),
    threadTs: z.string().min(1),
  }),
  z.object({
    source: z.literal('github'),
    owner: z.string().min(1),
    repo: z.string().min(1),
    number: z.number().int().positive(),
    kind: z.enum(['pull', 'issue']),
    commentId: z.number().int().positive().optional(),
  }),
  z.object({
    source: z.literal('linear'),
    agentSessionId: z.string().min(1),
    issueId: z.string().min(1),
  }),
  z.object({ source: z.literal('web') }),
  z.object({ source: z.literal('cli') }),
]);
export type ThreadRef = z.infer<typeof ThreadRef>;
export type ThreadSource = ThreadRef['source'];

/**
 * A stable string key for a thread, used to find the session a thread belongs to.
 * Web and CLI threads are not shared between sessions, so they have no key.
 */
export function threadKey(ref: ThreadRef): string | undefined {
  switch (ref.source) {
    case 'slack':
      return `slack:${ref.teamId}:${ref.channel}:${ref.threadTs}`;
    case 'github':
      return `github:${ref.owner.toLowerCase()}/${ref.repo.toLowerCase()}#${ref.number}`;
    case 'linear':
      return `linear:${ref.agentSessionId}`;
    case 'web':
    case 'cli':
      return undefined;
    default: {
      const _never: never = ref;
      return _never;
    }
  }
}
