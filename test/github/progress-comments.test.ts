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
  startSeq: 0,
  lastBody: null,
  finished: false,
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
    const comments = new ProgressComments(store);
    let finish!: (id: number) => void;
    void comments.post(request.id, () => new Promise((resolve) => (finish = resolve)));
    const id = comments.commentId(request, new AbortController().signal);
    finish(42);
    expect(await id).toBe(42);
    expect(reads()).toBe(0);
  });

  it('reads a comment posted elsewhere from the store once', async () => {
    const { store, reads } = storeWith([{ ...request, commentId: 9 }]);
    expect(await new ProgressComments(store).commentId(request, new AbortController().signal)).toBe(9);
    expect(reads()).toBe(1);
  });

  it('says "not posted yet" (retryable) when there is no comment and no post, or the post failed', async () => {
    const { store } = storeWith([request]);
    const comments = new ProgressComments(store);
    await expect(comments.commentId(request, new AbortController().signal)).rejects.toMatchObject({
      code: 'conflict',
      retryable: true,
    });
    void comments.post(request.id, async () => undefined);
    await expect(comments.commentId(request, new AbortController().signal)).rejects.toMatchObject({
      retryable: true,
    });
  });

  it('stops waiting when the reply is aborted', async () => {
    const { store } = storeWith([]);
    const comments = new ProgressComments(store);
    void comments.post(request.id, () => new Promise(() => undefined));
    const abort = new AbortController();
    const id = comments.commentId(request, abort.signal);
    abort.abort(new Error('timed out'));
    await expect(id).rejects.toThrow('timed out');
  });
});
