import { describe, expect, it } from 'vitest';
import { slackDelivery } from '../../integrations/slack/slack-routes.ts';
import { createSlackInterpreter, type SlackRequests } from '../../integrations/slack/slack-interpreter.ts';
import type { Interpretation, StoredDelivery } from '../../src/core/delivery-interpreter.ts';
import { appMention, blockAction, envelope, newTs } from '../fakes/fake-slack-events.ts';

/**
 * The Slack boundary reads stored bodies through zod schemas: a payload that is Slack's shape is
 * handed on with its fields typed; one that is not is ignored with the reason, never half-read.
 */
describe('Slack payloads at the boundary', () => {
  const calls: string[] = [];
  const inbound = {
    onMessage: async (teamId: string, event: { ts: string; channel: string }) => {
      calls.push(`message ${teamId} ${event.channel} ${event.ts}`);
      return { kind: 'ignore', reason: 'recorded' } satisfies Interpretation;
    },
    onAction: async (action: { actionId: string; user: string }) => {
      calls.push(`action ${action.actionId} ${action.user}`);
      return { kind: 'ignore', reason: 'recorded' } satisfies Interpretation;
    },
  } as unknown as SlackRequests;
  const surface = createSlackInterpreter({ requests: inbound, web: {} as never, store: {} as never, log: {} as never });
  const stored = (body: unknown): StoredDelivery => ({
    ...slackDelivery(body as Record<string, unknown>, JSON.stringify(body)),
    id: '1',
    receivedAt: new Date().toISOString(),
    attempt: 1,
  });
  const signal = new AbortController().signal;

  it("hands a mention in Slack's format to the inbound logic", async () => {
    calls.length = 0;
    const ts = newTs();
    const body = envelope(appMention({ user: 'U1', text: '<@UBOT> fix it', channel: 'C1', ts }));
    const delivery = stored(body);
    expect(delivery.dedupeKey).toBe(`msg:C1:${ts}`);
    expect(await surface.interpret(delivery, signal)).toEqual({ kind: 'ignore', reason: 'recorded' });
    expect(calls).toEqual([`message ${body.team_id} C1 ${ts}`]);
  });

  it.each([
    [
      'a mention without a ts',
      () => {
        const body = envelope(appMention({ user: 'U1', text: 'hi', channel: 'C1' }));
        delete (body.event as Record<string, unknown>).ts;
        return body;
      },
      /app_mention event that does not match Slack's format.*ts/,
    ],
    [
      'a mention whose channel is a number',
      () => {
        const body = envelope(appMention({ user: 'U1', text: 'hi' }));
        (body.event as Record<string, unknown>).channel = 42;
        return body;
      },
      /app_mention event that does not match Slack's format.*channel/,
    ],
    [
      'a click without its user',
      () => {
        const body = blockAction({ user: 'U1', actionId: 'patchbay_stop', value: 'x', messageTs: newTs() }) as Record<
          string,
          unknown
        >;
        delete body.user;
        return body;
      },
      /block_actions payload that does not match Slack's format.*user/,
    ],
  ])('ignores %s with the reason, reading nothing from it', async (_name, make, reason) => {
    calls.length = 0;
    const result = await surface.interpret(stored(make()), signal);
    expect(result.kind).toBe('ignore');
    expect(result.kind === 'ignore' && result.reason).toMatch(reason);
    expect(calls).toEqual([]);
  });

  it('still dedupes a malformed body by its hash, so its retries are stored once', () => {
    const body = envelope(appMention({ user: 'U1', text: 'hi' }));
    delete (body.event as Record<string, unknown>).ts;
    delete (body as Record<string, unknown>).event_id;
    expect(stored(body).dedupeKey).toMatch(/^body:[0-9a-f]{64}$/);
  });
});
