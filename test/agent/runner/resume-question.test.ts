import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import { createRunnerFixture, type RunnerFixture } from './runner-fixture.ts';

describe('a run resumed between a question turn and its record', () => {
  let fx: RunnerFixture;
  beforeAll(async () => {
    fx = await createRunnerFixture();
  });
  afterAll(() => fx.close());

  it('asks the question again instead of failing the session', async () => {
    const id = await fx.newSession('Format the code');
    // What a worker killed right after recording the model's ask_user turn leaves behind: the call
    // is in the transcript, but no question-asked event and no pending question.
    await fx.store.commitStep(id, {
      messages: [
        { message: { role: 'user', content: 'New task.\n\nFormat the code' }, eventSeq: 2 },
        {
          message: {
            role: 'assistant',
            toolCalls: [
              {
                id: 'call_ask',
                name: 'ask_user',
                input: { question: 'Tabs or spaces?', choices: ['tabs', 'spaces'], recommended: 'spaces' },
              },
            ],
          },
        },
      ],
      events: [
        {
          event: {
            type: 'usage',
            turn: 0,
            model: 'scripted',
            inputTokens: 1,
            outputTokens: 1,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
          },
        },
      ],
    });
    const model = createScriptedProvider({ scenario: () => ({ text: 'should not be asked' }) });

    const outcome = await fx.run(id, model);

    expect(outcome).toMatchObject({
      kind: 'waiting',
      question: { questionId: 'call_ask', question: 'Tabs or spaces?', choices: ['tabs', 'spaces'] },
    });
    expect(model.requests).toHaveLength(0);
    expect((await fx.store.get(id))?.pendingQuestion).toMatchObject({
      toolCallId: 'call_ask',
      question: 'Tabs or spaces?',
    });
    const asked = (await fx.store.events(id, { types: ['question-asked'] })).map((e) => e.event);
    expect(asked).toEqual([
      {
        type: 'question-asked',
        questionId: 'call_ask',
        question: 'Tabs or spaces?',
        choices: ['tabs', 'spaces'],
        recommended: 'spaces',
      },
    ]);
  });
});
