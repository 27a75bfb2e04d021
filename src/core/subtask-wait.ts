import type { SessionRecord } from './session-record.ts';
import type { SubtaskLine } from './subtasks.ts';

/**
 * Whether a waiting session waits for its sub-tasks rather than for a person: it has children and
 * no open question. A thread then shows it as working (not as asking), and a surface that ends a
 * request when the session asks (GitHub's progress comment) keeps following it.
 */
export function waitsForSubtasks(
  session: Pick<SessionRecord, 'status' | 'pendingQuestion'>,
  children: readonly SubtaskLine[],
): boolean {
  return session.status === 'waiting' && session.pendingQuestion === null && children.length > 0;
}
