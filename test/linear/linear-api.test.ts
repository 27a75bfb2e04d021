import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLinearApi, linearClient } from '../../integrations/linear/linear-api.ts';
import { isPatchbayError } from '../../src/core/errors.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { scriptedChaos } from '../fakes/scripted-chaos.ts';

/** The real @linear/sdk against the fake: what the fake refuses, and how the client retries. */
describe('Linear API through @linear/sdk', () => {
  let linear: FakeLinear;
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  const api = () =>
    createLinearApi({
      client: linearClient(linear.apiUrl, { accessToken: linear.accessToken }),
      log,
      sleep: async () => undefined,
    });

  beforeAll(async () => {
    linear = await startFakeLinear();
    linear.addTeam({
      id: 't1',
      key: 'ENG',
      name: 'Engineering',
      states: [{ id: 's1', name: 'Todo', type: 'unstarted', position: 0 }],
    });
    linear.addIssue({ id: 'i1', identifier: 'ENG-1', title: 'x', description: null, teamId: 't1', stateId: 's1' });
    linear.addSession('s-api', 'i1');
  });
  afterAll(async () => linear?.close());

  it('refuses malformed activity content the way Linear documents it validates it', async () => {
    const raw = linearClient(linear.apiUrl, { accessToken: linear.accessToken });
    const bad = [
      { content: { type: 'action', action: 'Ran' } },
      { content: { type: 'action', action: 'Ran', parameter: { command: 'ls' } } },
      { content: { type: 'response', body: 'done' }, ephemeral: true },
      { content: { type: 'prompt', body: 'agents cannot write prompts' } },
      {
        content: { type: 'thought', body: 'not a choice' },
        signal: 'select',
        signalMetadata: { options: [{ value: 'a' }] },
      },
      { content: { type: 'elicitation', body: 'Pick one' }, signal: 'select', signalMetadata: {} },
      { content: { type: 'thought', body: 'x' }, signal: 'sideways' },
    ];
    for (const input of bad) {
      const before = linear.refused.length;
      await expect(raw.createAgentActivity({ agentSessionId: 's-api', ...input } as never)).rejects.toThrow();
      expect(linear.refused.length, JSON.stringify(input)).toBe(before + 1);
    }
    expect(linear.activities).toEqual([]);
    // And a document that does not fit the schema never reaches a resolver.
    await expect(raw.client.request('query { issue(id: "i1") { notAField } }', {})).rejects.toThrow(/notAField/);
    linear.refused.length = 0;
  });

  it('posts what Linear accepts: an action with its parameter, and a select elicitation', async () => {
    await api().postActivity('s-api', {
      content: { type: 'action', action: 'Ran', parameter: '', result: 'ok' },
      ephemeral: true,
    });
    await api().postActivity('s-api', {
      content: { type: 'elicitation', body: 'Which repository should I work in?' },
      options: [{ value: 'https://github.com/acme/shop' }],
    });
    expect(linear.activitiesOf('s-api').map((a) => [a.content.type, a.ephemeral, a.signal])).toEqual([
      ['action', true, undefined],
      ['elicitation', undefined, 'select'],
    ]);
    expect(linear.refused).toEqual([]);
  });

  it('retries a rate limit and then succeeds; gives up on invalid input at once, logging the GraphQL error', async () => {
    linear.failNext(2, 429, 0);
    await api().postActivity('s-api', { content: { type: 'thought', body: 'after the rate limit' } });
    expect(linear.activitiesOf('s-api').at(-1)!.content.body).toBe('after the rate limit');

    const operations = linear.operations.length;
    const error = await api()
      .postActivity('unknown-session', { content: { type: 'thought', body: 'x' } })
      .catch((e: unknown) => e);
    expect(isPatchbayError(error)).toBe(true);
    expect((error as { retryable: boolean }).retryable).toBe(false);
    expect(linear.operations.length).toBe(operations + 1);
    expect(
      lines.some(
        (l) => l.includes('Entity not found: AgentSession unknown-session') && l.includes('agentActivityCreate'),
      ),
    ).toBe(true);
    linear.refused.length = 0;
  });

  it('treats a repeated activity id as already posted', async () => {
    const id = '6f1d2c3b-4a59-4e6f-8a7b-1c2d3e4f5a6b';
    await api().postActivity('s-api', { content: { type: 'thought', body: 'once' }, id });
    await api().postActivity('s-api', { content: { type: 'thought', body: 'once' }, id });
    expect(linear.activitiesOf('s-api').filter((a) => a.id === id)).toHaveLength(1);
    // Known by its id, not by the refusal's wording: the same id in another session is no repeat.
    linear.addSession('s-other', 'i1');
    await expect(api().postActivity('s-other', { content: { type: 'thought', body: 'once' }, id })).rejects.toThrow(
      /Argument Validation Error/,
    );
    expect(linear.activitiesOf('s-other')).toEqual([]);
    linear.refused.length = 0;
  });

  it('tries a call again when the connection dropped before Linear answered (fetch failed, nothing done)', async () => {
    const chaos = scriptedChaos({
      'linear createAgentActivity,AgentActivityPayload (network)': ['dropped', 'dropped'],
      'linear patchbayViewer (network)': ['dropped'],
    });
    const dropping = await startFakeLinear({ chaos });
    try {
      dropping.addTeam({ id: 't1', key: 'ENG', name: 'Engineering', states: [] });
      dropping.addIssue({ id: 'i1', identifier: 'ENG-1', title: 'x', description: null, teamId: 't1', stateId: 's1' });
      dropping.addSession('s-drop', 'i1');
      const client = createLinearApi({
        client: linearClient(dropping.apiUrl, { accessToken: dropping.accessToken }),
        log,
        sleep: async () => undefined,
      });
      const id = '0b6f0f61-5c1e-4d3a-9f7e-2a1b3c4d5e6f';
      await client.postActivity('s-drop', { content: { type: 'thought', body: 'through the drops' }, id });
      await expect(client.viewerId()).resolves.toBeTruthy();
      expect(chaos.injected.map((f) => f.kind)).toEqual(['dropped', 'dropped', 'dropped']);
      expect(dropping.activitiesOf('s-drop').map((a) => a.id)).toEqual([id]);
      expect(dropping.refused).toEqual([]);
    } finally {
      await dropping.close();
    }
  });
});
