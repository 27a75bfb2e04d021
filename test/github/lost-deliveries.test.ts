import { describe, expect, it } from 'vitest';
import { lostDeliveries, maxRedeliveries, type DeliveryAttempt } from '../../integrations/github/lost-deliveries.ts';
import { nextCursor } from '../../integrations/github/delivery-sweep.ts';

const since = new Date('2026-01-01T10:00:00Z');
let id = 1;
const at = (minute: number, guid: string, statusCode: number, redelivery = false): DeliveryAttempt => ({
  id: id++,
  guid,
  deliveredAt: new Date(since.getTime() + minute * 60_000),
  redelivery,
  statusCode,
});

describe('lostDeliveries', () => {
  it.each([
    ['taken (202)', [at(1, 'a', 202)], []],
    ['known (200) or refused on purpose (401, 413)', [at(1, 'a', 200), at(2, 'b', 401), at(3, 'c', 413)], []],
    ['a 5xx while the database was down', [at(1, 'a', 500)], ['a']],
    [
      'no answer (502 failed to connect), a timeout, a rate limit',
      [at(1, 'a', 502), at(2, 'b', 408), at(3, 'c', 429)],
      ['a', 'b', 'c'],
    ],
    ['a failure a redelivery then took', [at(1, 'a', 500), at(2, 'a', 202, true)], []],
    ['a failed redelivery: asked again', [at(1, 'a', 500), at(2, 'a', 503, true)], ['a']],
  ])('%s', (_, attempts, lost) => {
    expect(lostDeliveries(attempts, since).redeliver.map((a) => a.guid)).toEqual(lost);
  });

  it('asks for the newest failed attempt of an event', () => {
    const first = at(1, 'a', 500);
    const again = at(2, 'a', 500, true);
    expect(lostDeliveries([again, first], since).redeliver).toEqual([again]);
  });

  it(`gives up on an event after ${maxRedeliveries} redeliveries`, () => {
    const tries = [at(1, 'a', 500), ...Array.from({ length: maxRedeliveries }, (_, i) => at(2 + i, 'a', 500, true))];
    expect(lostDeliveries(tries, since)).toMatchObject({ redeliver: [], givenUp: ['a'] });
  });

  it('starts the next look at the oldest event still in doubt, else at the newest attempt seen', () => {
    expect(lostDeliveries([at(5, 'a', 202), at(3, 'b', 500)], since).nextSince).toEqual(at(3, 'x', 0).deliveredAt);
    expect(lostDeliveries([at(5, 'a', 202), at(3, 'b', 202)], since).nextSince).toEqual(at(5, 'x', 0).deliveredAt);
    expect(lostDeliveries([], since).nextSince).toEqual(since);
  });
});

describe('nextCursor', () => {
  it("reads the cursor of GitHub's next link", () => {
    const link =
      '<https://api.github.com/app/hook/deliveries?per_page=100&cursor=v1_123>; rel="next", <https://api.github.com/app/hook/deliveries?per_page=100>; rel="first"';
    expect(nextCursor(link)).toBe('v1_123');
    expect(nextCursor('<https://api.github.com/app/hook/deliveries?per_page=100>; rel="first"')).toBeUndefined();
    expect(nextCursor(undefined)).toBeUndefined();
  });
});
