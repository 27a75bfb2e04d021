import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

type LogEntry = { level: number; msg: string; deliveryId?: string; delivery?: string };

describe('GitHub webhooks: a signed delivery that cannot be read is logged and acknowledged', () => {
  let fake: FakeGitHub;
  let app: GitHubPatchbay;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    app = await startGitHubPatchbay(fake, createScriptedProvider({ scenario: () => ({ text: 'nothing' }) }));
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
  });

  const entries = () => app.logLines.map((line) => JSON.parse(line) as LogEntry);
  const warningsAbout = (deliveryId: string) =>
    entries().filter((e) => e.level >= 40 && (e.deliveryId === deliveryId || e.delivery === deliveryId));
  const row = (deliveryId: string) =>
    app.database.db
      .selectFrom('inbound_deliveries')
      .select(['finished_at as processed_at', 'attempts', 'status'])
      .where('delivery_id', '=', deliveryId)
      .executeTakeFirst();

  it('acknowledges a signed body that is not JSON with 200, logs it, and queues nothing', async () => {
    const body = '{"action":"created",';
    const deliveryId = randomUUID();
    const response = await fetch(`${app.url}/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issue_comment',
        'x-github-delivery': deliveryId,
        'x-hub-signature-256': `sha256=${createHmac('sha256', webhookSecret).update(body).digest('hex')}`,
      },
      body,
    });
    expect(response.status).toBe(200);
    expect(warningsAbout(deliveryId)).toHaveLength(1);
    expect(await row(deliveryId)).toBeUndefined();
  });

  it.each([['application/x-www-form-urlencoded'], ['text/plain'], ['application/octet-stream']])(
    'refuses a badly signed %s delivery with 401 and nothing else',
    async (contentType) => {
      const deliveryId = randomUUID();
      const response = await fetch(`${app.url}/github/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': contentType,
          'x-github-event': 'issue_comment',
          'x-github-delivery': deliveryId,
          'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
        },
        body: 'payload=%7B%7D',
      });
      expect(response.status).toBe(401);
      expect(await response.text()).toBe('');
      expect(await row(deliveryId)).toBeUndefined();
    },
  );

  it('logs an issue_comment whose shape is wrong at warn level, once, and does not retry it', async () => {
    const sent = await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', {
      action: 'created',
      comment: 'not an object',
    });
    expect(sent.status).toBe(202);
    await waitFor(async () => ((await row(sent.deliveryId))?.processed_at ? true : undefined), 'the delivery worked');
    expect(warningsAbout(sent.deliveryId)).toHaveLength(1);
    expect((await row(sent.deliveryId))?.attempts).toBe(1);
  });

  it('logs an installation event whose shape is wrong once and marks it done instead of retrying it', async () => {
    const sent = await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'installation', {
      action: 'created',
      installation: { id: 'nope' },
    });
    expect(sent.status).toBe(202);
    await waitFor(async () => ((await row(sent.deliveryId))?.processed_at ? true : undefined), 'the delivery worked');
    expect(warningsAbout(sent.deliveryId)).toHaveLength(1);
    expect((await row(sent.deliveryId))?.attempts).toBe(1);
  });
});
