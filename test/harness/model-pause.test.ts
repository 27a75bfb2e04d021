import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createAnthropicProvider } from '../../src/models/anthropic-provider.ts';
import {
  type AnthropicReply,
  type AnthropicRequest,
  type FakeAnthropic,
  startFakeAnthropic,
} from '../fakes/fake-anthropic.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { type PatchbayFixture, startTestPatchbay } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

/**
 * A model service that stays down longer than a call's retry deadline: the session pauses with
 * the reason and a question instead of failing, and goes on from where it was once someone says
 * "Try again" and the service is back. The real Anthropic adapter against its loopback fake, with
 * a deadline of a fraction of a second (the default is minutes).
 */
describe('a model service that stays down', () => {
  let anthropic: FakeAnthropic;
  let remote: RemoteFixture;
  let app: PatchbayFixture;
  let down = true;

  function script(body: AnthropicRequest): AnthropicReply {
    if (down)
      return {
        kind: 'error',
        status: 529,
        type: 'overloaded_error',
        message: 'Overloaded',
        headers: { 'retry-after-ms': '30' },
      };
    const turn = body.messages.filter((m) => m.role === 'assistant').length;
    if (turn === 0)
      return { content: [{ type: 'tool_use', name: 'write_file', input: { path: 'NOTES.md', content: 'notes\n' } }] };
    return { content: [{ type: 'text', text: 'Wrote NOTES.md.' }] };
  }

  beforeAll(async () => {
    anthropic = await startFakeAnthropic({ script });
    remote = await createRemote();
    const model = createAnthropicProvider({
      model: 'claude-sonnet-4-6',
      apiKey: 'test-anthropic-key',
      baseUrl: anthropic.baseUrl,
      retry: { baseDelayMs: 20, maxDelayMs: 50, deadlineMs: 400 },
      log: pino({ level: 'silent' }),
    });
    app = await startTestPatchbay({ model });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await anthropic?.close();
    await remote?.cleanup();
  });

  it('pauses with the reason instead of failing, and carries on after "Try again"', { timeout: 240_000 }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Write a NOTES.md file with one line of notes about this repository',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const paused = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 120_000);
    expect(paused.status).toBe('waiting');
    expect(paused.error).toBeNull();
    expect(paused.pendingQuestion).toMatchObject({ choices: ['Try again', 'Stop'], recommended: 'Try again' });
    expect(paused.pendingQuestion?.question).toMatch(
      /^The model service is still not answering \(Anthropic is overloaded: Overloaded.*\)\. I have paused here with the work so far kept\./,
    );
    const told = await app.store.events(id, { types: ['model-waiting', 'error'] });
    expect(told.map((e) => e.event.type)).toEqual(['model-waiting']);
    expect(anthropic.calls.length).toBeGreaterThan(1);

    down = false;
    await app.service.sendMessage(id, alice, 'Try again', paused.pendingQuestion!.questionId);
    await waitFor(async () => (await app.store.get(id))?.status !== 'waiting' || undefined, 'the answer to be taken');
    const done = await waitForStatus(app, id, ['completed', 'failed', 'waiting'], 120_000);
    expect(done.status).toBe('completed');
    expect(done.result?.summary).toBe('Wrote NOTES.md.');
    expect(anthropic.rejections).toEqual([]);
  });
});
