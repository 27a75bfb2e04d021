import Fastify from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackRoutes } from '../../integrations/slack/slack-routes.ts';
import type { ReceivedDelivery } from '../../src/core/delivery-interpreter.ts';
import { signBody } from '../fakes/fake-slack-events.ts';

const SECRET = 'broken-payload-test-signing-secret';

describe('Slack receiver: a signed request whose body cannot be read', () => {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  const server = Fastify();
  const stored: ReceivedDelivery[] = [];
  const inbox = {
    accept: async (delivery: ReceivedDelivery) => {
      stored.push(delivery);
      return 'accepted' as const;
    },
  };
  let url = '';

  beforeAll(async () => {
    await server.register(slackRoutes({ signingSecret: SECRET, inbox, log }));
    url = `${await server.listen({ host: '127.0.0.1', port: 0 })}/slack/events`;
  });
  afterAll(() => server.close());

  it.each([
    ['JSON that does not parse', 'application/json', '{"type":"event_callback","event":'],
    ['JSON that is not an object', 'application/json', '"just a string"'],
    ['an interactivity form whose payload does not parse', 'application/x-www-form-urlencoded', 'payload=%7Bnot-json'],
  ])('acknowledges %s with 200 (so Slack does not retry it) and logs it', async (_name, contentType, body) => {
    const before = lines.length;
    const signed = signBody(SECRET, body, { contentType });
    const response = await fetch(url, { method: 'POST', headers: signed.headers, body: signed.body });
    expect(response.status).toBe(200);
    const logged = lines.slice(before).map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(logged.some((entry) => entry.level >= 40 && /Slack request body/.test(entry.msg))).toBe(true);
    expect(stored).toEqual([]);
  });

  it.each([['application/json'], ['text/plain'], ['application/octet-stream']])(
    'refuses a %s body with a bad signature with 401',
    async (contentType) => {
      const signed = signBody('not-the-secret', '{"type":"event_callback","event":', { contentType });
      const response = await fetch(url, { method: 'POST', headers: signed.headers, body: signed.body });
      expect(response.status).toBe(401);
      expect(stored).toEqual([]);
    },
  );
});
