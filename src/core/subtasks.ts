import { z } from 'zod';
import type { NewEvent } from './run-log.ts';
import type { SessionStatus } from './session-status.ts';

/**
 * Fan-out: a session's agent splits its work into sub-tasks, each a child session with
 * its own sandbox, branch and run. These are the words every layer shares about them.
 */

/** The most sub-tasks one spawn_subtasks call may ask for, unless SUBTASKS_MAX says otherwise. */
export const DEFAULT_SUBTASKS_MAX = 5;

/** One sub-task as the agent asks for it; `repo` absent means the parent session's repository. */
export const SubtaskSpec = z.object({
  title: z.string().trim().min(1).max(120),
  prompt: z.string().trim().min(1),
  repo: z.string().trim().min(1).optional(),
});
export type SubtaskSpec = z.infer<typeof SubtaskSpec>;

/** A child session as its parent, the page and the threads show it. */
export type SubtaskLine = {
  sessionId: string;
  /** 1-based, in the order the agent listed the tasks. */
  index: number;
  title: string;
  repo: string;
  status: SessionStatus;
  branch: string | null;
  commit?: string | undefined;
  prUrl?: string | undefined;
  /** Why it failed, for a failed child. */
  error?: string | null | undefined;
};

/** One child session as a spawn_subtasks call asks for it. */
export type NewChild = {
  /** The id it gets when it is created now; a replayed call finds the child made before instead. */
  id: string;
  /** 1-based, in the order the agent listed the tasks. */
  index: number;
  title: string;
  repo: string;
  prompt: string;
  branch: string;
  baseBranch?: string | undefined;
};

/**
 * Where the sub-task sessions are kept, as the harness meets them (the session store and the run
 * queue implement it). `spawn` creates a call's children with the parent's step in one write, at
 * most once per call and index, under the parent's run epoch, and asks for their runs.
 */
export interface SubtaskStore {
  spawn(
    parentId: string,
    spawn: { callId: string; children: NewChild[]; events: NewEvent[]; epoch?: number | undefined },
  ): Promise<SubtaskLine[]>;
  /** A session's children in their order, one spawn call's when `callId` is given. */
  children(parentId: string, callId?: string): Promise<SubtaskLine[]>;
}
