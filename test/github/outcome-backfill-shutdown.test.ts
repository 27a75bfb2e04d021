import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { backfillOutcomes } from '../../integrations/github/outcome-tracker.ts';
import type { GitHubClient } from '../../integrations/github/github-client.ts';
import type { OutcomeLedger } from '../../src/core/pull-outcome.ts';

/**
 * A shutdown aborts the backfill's GitHub reads (Ctrl-C while it runs at start): that ends the
 * backfill quietly, leaving the rest for the next start, and adds no warning to the lines a
 * terminal sees above info. A read that fails for another reason is still a warning.
 */
describe('outcome backfill at shutdown', () => {
  const pulls = [
    { owner: 'acme', repo: 'shop', number: 1 },
    { owner: 'acme', repo: 'shop', number: 2 },
  ];
  const ledger = { backfillCandidates: async () => pulls } as unknown as OutcomeLedger;

  function setup(fail: (signal: AbortSignal | undefined, controller: AbortController) => Error) {
    const controller = new AbortController();
    const lines: { level: number; msg: string }[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const requests: string[] = [];
    const client = {
      identity: async () => ({ login: 'patchbay[bot]' }),
      forRepo: async () => ({
        request: async (route: string, params: { request?: { signal?: AbortSignal } }) => {
          requests.push(route);
          throw fail(params.request?.signal, controller);
        },
      }),
    } as unknown as GitHubClient;
    return { controller, lines, log, requests, client };
  }

  it('stops at the abort without a warning', async () => {
    const { controller, lines, log, requests, client } = setup((_signal, c) => {
      c.abort(new Error('shutting down'));
      return Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
    });
    expect(await backfillOutcomes({ client, ledger, log, signal: controller.signal })).toEqual({
      read: 0,
      finished: 0,
    });
    expect(requests).toHaveLength(1);
    expect(lines.filter((l) => l.level > 30)).toEqual([]);
  });

  it('still warns about a read that failed while it was not stopping', async () => {
    const { controller, lines, log, client } = setup(() =>
      Object.assign(new Error('Bad credentials'), { status: 401 }),
    );
    await backfillOutcomes({ client, ledger, log, signal: controller.signal });
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'could not read a pull request for its outcome; skipped',
      'could not read a pull request for its outcome; skipped',
    ]);
  });
});
