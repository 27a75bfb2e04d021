import { z } from 'zod';
import type { Actor } from './actor.ts';
import type { SessionStatus } from './session-status.ts';

/** The question a waiting session has open. */
export const PendingQuestion = z.object({
  questionId: z.string(),
  /** The ask_user tool call that the answer will complete. */
  toolCallId: z.string(),
  question: z.string(),
  choices: z.array(z.string()).optional(),
  recommended: z.string().optional(),
  /** Set when the question is an approval request: the command held and until when. */
  approval: z
    .object({
      requestId: z.string(),
      command: z.string(),
      classes: z.array(z.string()),
      reasons: z.array(z.string()),
      expiresAt: z.string(),
      /**
       * An engine's hook waits for the decision while its run goes on (the session stays running):
       * the decision is recorded for it without queuing a run.
       */
      live: z.boolean().optional(),
    })
    .optional(),
});
export type PendingQuestion = z.infer<typeof PendingQuestion>;

export const SessionResult = z.object({
  summary: z.string().optional(),
  branch: z.string().optional(),
  commit: z.string().optional(),
  prUrl: z.string().optional(),
  /** Why the work was not pushed (a person denied the push of an ask-before-push session), in the thread's words. */
  unpushed: z.string().optional(),
  /** The run answered a question (ask mode): `summary` is the answer; nothing was committed or pushed. */
  answered: z.boolean().optional(),
});
export type SessionResult = z.infer<typeof SessionResult>;

/** A session as the rest of Patchbay sees it. */
export type SessionRecord = {
  id: string;
  /** The session that spawned this one as a sub-task; null for a session people started. */
  parentId: string | null;
  createdAt: string;
  updatedAt: string;
  status: SessionStatus;
  repo: string;
  prompt: string;
  title: string;
  requester: Actor;
  baseBranch: string | null;
  branch: string | null;
  lastSeq: number;
  pendingQuestion: PendingQuestion | null;
  result: SessionResult | null;
  error: string | null;
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number };
};
