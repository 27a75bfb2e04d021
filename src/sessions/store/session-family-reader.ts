import type { FamilyMember, SessionFamily } from '../../core/session-family.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import type { SubtaskLine } from '../../core/subtasks.ts';

/** The two reads of the session store a family is made of. */
export type FamilyReads = {
  get(sessionId: string): Promise<SessionRecord | undefined>;
  children(parentId: string): Promise<SubtaskLine[]>;
};

/**
 * The session store's answer to "which sessions belong with this one": the parent
 * first, then its children in their order, each with the pull request it opened. Fan-out is one
 * level deep, so a child's family is its parent's.
 */
export function createSessionFamily(store: FamilyReads): SessionFamily {
  return { family: (sessionId) => readFamily(store, sessionId) };
}

async function readFamily(store: FamilyReads, sessionId: string): Promise<FamilyMember[]> {
  const session = await store.get(sessionId);
  if (!session) return [];
  const parent = session.parentId === null ? session : await store.get(session.parentId);
  if (!parent) return [member(session.id, session.repo, session.result?.prUrl)];
  const children = await store.children(parent.id);
  return [
    member(parent.id, parent.repo, parent.result?.prUrl),
    ...children.map((child) => member(child.sessionId, child.repo, child.prUrl)),
  ];
}

function member(sessionId: string, repo: string, prUrl: string | undefined): FamilyMember {
  return { sessionId, repo, ...(prUrl !== undefined && { prUrl }) };
}
