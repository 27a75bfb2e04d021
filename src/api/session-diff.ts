import { branchDiff } from '../git/branch-diff.ts';
import type { SessionRecord } from '../core/session-record.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import type { SessionDiff } from './api-types.ts';

/**
 * The session's pushed branch against the commit it started from, or one commit of it. Read from
 * the host's mirror of the repository, which holds exactly what was pushed: the workspace is the
 * model's and the host never runs git in it.
 */
export async function readSessionDiff(
  session: SessionRecord,
  deps: {
    store: Pick<SessionStore, 'events'>;
    dataDir: string;
    commit?: string;
    signal: AbortSignal;
    /** Fetches the repository into this host's mirror: the branch was pushed by a worker on another host. */
    refreshMirror?: (repo: string, signal: AbortSignal) => Promise<void>;
  },
): Promise<SessionDiff> {
  const events = await deps.store.events(session.id, { types: ['workspace-ready', 'branch-pushed'] });
  const ready = events.findLast((e) => e.event.type === 'workspace-ready')?.event;
  const pushed = events.findLast((e) => e.event.type === 'branch-pushed')?.event;
  if (ready?.type !== 'workspace-ready' || pushed?.type !== 'branch-pushed') {
    return { state: 'none', reason: 'nothing has been pushed yet' };
  }
  const read = () =>
    branchDiff({
      repo: session.repo,
      dataDir: deps.dataDir,
      base: ready.baseCommit,
      head: pushed.commit,
      ...(deps.commit && { commit: deps.commit }),
      signal: deps.signal,
    });
  let diff = await read();
  if (!diff && deps.refreshMirror) {
    await deps.refreshMirror(session.repo, deps.signal);
    diff = await read();
  }
  if (!diff) {
    return {
      state: 'none',
      reason: deps.commit
        ? `commit ${deps.commit} is not on the pushed branch`
        : 'the pushed commits are not in this server’s mirror',
    };
  }
  return { state: 'ready', branch: pushed.branch, ...diff, ...(deps.commit && { commit: deps.commit }) };
}
