import { describe, expect, it } from 'vitest';
import type { GitHubRequest } from '../../integrations/github/github-store.ts';
import { ProgressComments } from '../../integrations/github/progress-comments.ts';

const request: GitHubRequest = {
  id: 7,
  sessionId: 's1',
  threadKey: 'github:acme/site#3',
  owner: 'acme',
  repo: 'site',
  number: 3,
  commentKind: 'issue',
  commentId: null,
  replyTo: null,
  commentIntendedAt: null,
  createdAt: new Date(0),
  startSeq: 0,
  lastBody: null,
  finished: false,
};

/** A recovery that must not run (the comment is posted, or being posted, elsewhere). */
const noRecovery = async (): Promise<number> => {
  throw new Error('recovered a comment that was there');
};

function storeWith(rows: GitHubRequest[]) {
  let reads = 0;
  return {
    store: {
      async openRequests() {
        reads += 1;
        return rows;
      },
    },
    reads: () => reads,
  };
}

describe('ProgressComments: the replier gets the id of the comment the reply step posts', () => {
  it('awaits a post under way in this process, without reading the store', async () => {
    const { store, reads } = storeWith([]);
    const comments = new ProgressComments(store, noRecovery);
    let finish!: (id: number) => void;
    void comments.post(request.id, () => new Promise((resolve) => (finish = resolve)));
    const id = comments.commentId(request, new AbortController().signal);
    finish(42);
    expect(await id).toBe(42);
    expect(reads()).toBe(0);
  });

  it('reads a comment posted elsewhere from the store once', async () => {
    const { store, reads } = storeWith([{ ...request, commentId: 9 }]);
    expect(await new ProgressComments(store, noRecovery).commentId(request, new AbortController().signal)).toBe(9);
    expect(reads()).toBe(1);
  });

  it('posts (or finds) a comment nobody recorded from the stored row, once, when asked for it', async () => {
    const { store } = storeWith([request]);
    const asked: number[] = [];
    const comments = new ProgressComments(store, async (row) => {
      asked.push(row.id);
      return 55;
    });
    const signal = new AbortController().signal;
    const [a, b] = await Promise.all([comments.commentId(request, signal), comments.commentId(request, signal)]);
    expect([a, b]).toEqual([55, 55]);
    expect(asked).toEqual([7]);
  });

  it('says "not posted yet" (retryable) when the post failed; a failed recovery is thrown to the notifier', async () => {
    const { store } = storeWith([]);
    const comments = new ProgressComments(store, noRecovery);
    void comments.post(request.id, async () => undefined);
    await expect(comments.commentId(request, new AbortController().signal)).rejects.toMatchObject({
      code: 'conflict',
      retryable: true,
    });
    const down = new ProgressComments(storeWith([request]).store, async () => {
      throw new Error('GitHub is down');
    });
    await expect(down.commentId(request, new AbortController().signal)).rejects.toThrow('GitHub is down');
  });

  it('stops waiting when the reply is aborted', async () => {
    const { store } = storeWith([]);
    const comments = new ProgressComments(store, noRecovery);
    void comments.post(request.id, () => new Promise(() => undefined));
    const abort = new AbortController();
    const id = comments.commentId(request, abort.signal);
    abort.abort(new Error('timed out'));
    await expect(id).rejects.toThrow('timed out');
  });

  it('leaves a post another process began lately to it; one begun long ago (a crash) is looked for', async () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    const recovered: number[] = [];
    const recover = async (row: GitHubRequest) => {
      recovered.push(row.id);
      return 77;
    };
    const lately = { ...request, commentIntendedAt: new Date(now - 5_000) };
    const busy = new ProgressComments(storeWith([lately]).store, recover, () => now);
    await expect(busy.commentId(lately, new AbortController().signal)).rejects.toMatchObject({ retryable: true });
    expect(recovered).toEqual([]);
    // Taken lately and not begun yet: the interpreter that took it posts it soon.
    const taken = { ...request, createdAt: new Date(now - 2_000) };
    const soon = new ProgressComments(storeWith([taken]).store, recover, () => now);
    await expect(soon.commentId(taken, new AbortController().signal)).rejects.toMatchObject({ retryable: true });
    expect(recovered).toEqual([]);
    const crashed = { ...request, commentIntendedAt: new Date(now - 120_000) };
    const after = new ProgressComments(storeWith([crashed]).store, recover, () => now);
    expect(await after.commentId(crashed, new AbortController().signal)).toBe(77);
    expect(recovered).toEqual([7]);
  });
});
