import pino from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../../src/models/anthropic-provider.ts';
import type { ModelImage, ModelMessage, ModelProvider } from '../../../src/models/model-provider.ts';
import { createOpenAIChatProvider } from '../../../src/models/openai-chat-provider.ts';
import { createOpenAIResponsesProvider } from '../../../src/models/openai-responses-provider.ts';
import { createPictureFitter, defaultIntakeLimits } from '../../../src/sessions/inbound/image-intake.ts';
import { type AnthropicRequest, type FakeAnthropic, startFakeAnthropic } from '../../fakes/fake-anthropic.ts';
import { type FakeOpenAI, startFakeOpenAI } from '../../fakes/fake-openai.ts';
import { blankPng } from '../../helpers/blank-png.ts';
import { createRunnerFixture, type RunnerFixture } from './runner-fixture.ts';

/**
 * A session's transcript as it gathers pictures, sent by the real runner and Anthropic provider to
 * the fake API, which refuses as Anthropic does: over 100 pictures a request, a side over 8000 px,
 * or over 2000 px once a request carries more than 20. The transcripts are stored as an earlier
 * Patchbay kept them (screenshots unscaled), then the run goes on from the database.
 */
describe('the pictures a transcript gathers stay within what one request may carry', () => {
  let fx: RunnerFixture;
  let anthropic: FakeAnthropic;
  let openai: FakeOpenAI;
  beforeAll(async () => {
    fx = await createRunnerFixture();
    anthropic = await startFakeAnthropic({ script: () => ({ content: [{ type: 'text', text: 'Done.' }] }) });
    openai = await startFakeOpenAI({ responses: () => ({ text: 'Done.' }), chat: () => ({ text: 'Done.' }) });
  });
  afterAll(async () => {
    await anthropic?.close();
    await openai?.close();
    await fx?.close();
  });
  const model = () =>
    createAnthropicProvider({
      model: 'claude-sonnet-4-6',
      apiKey: 'test-anthropic-key',
      baseUrl: anthropic.baseUrl,
      maxRetries: 0,
      log: pino({ level: 'silent' }),
    });
  const picture = (name: string, width: number, height: number, sized = true): ModelImage => ({
    mediaType: 'image/png',
    data: Buffer.from(blankPng(width, height)).toString('base64'),
    name,
    ...(sized && { width, height }),
  });
  /** A session whose stored transcript is the task, then one screenshot call per picture with its result. */
  const sessionWith = async (pictures: ModelImage[]) => {
    const sessionId = await fx.newSession('Make the page look right.');
    const [task] = await fx.store.events(sessionId, { types: ['user-message'] });
    const calls = pictures.map((_, i) => ({
      id: `toolu_${i}`,
      name: 'screenshot',
      input: { url: 'http://127.0.0.1:3000/' },
    }));
    const messages: ModelMessage[] = [
      { role: 'user', content: 'Make the page look right.' },
      { role: 'assistant', toolCalls: calls },
      ...pictures.map(
        (image, i): ModelMessage => ({
          role: 'tool',
          toolCallId: `toolu_${i}`,
          name: 'screenshot',
          content: `Screenshot ${i}, attached.`,
          isError: false,
          images: [image],
        }),
      ),
    ];
    await fx.store.replaceTranscript(
      sessionId,
      messages.map((message, i) => ({ message, eventSeq: i === 0 ? (task?.seq ?? null) : null })),
      [],
    );
    return sessionId;
  };
  const sides = async (body: AnthropicRequest) => {
    const data = body.messages.flatMap((m) =>
      Array.isArray(m.content)
        ? m.content.flatMap((b) => (b.type === 'tool_result' && Array.isArray(b.content) ? b.content : [b]))
        : [],
    );
    const images = (data as Array<{ type: string; source?: { data: string } }>).filter((b) => b.type === 'image');
    return Promise.all(
      images.map(async (b) => {
        const meta = await sharp(Buffer.from(b.source?.data ?? '', 'base64')).metadata();
        return Math.max(meta.width ?? 0, meta.height ?? 0);
      }),
    );
  };
  const storedText = async (sessionId: string) =>
    (await fx.store.transcript(sessionId))
      .map((e) => (e.message.role === 'assistant' ? '' : e.message.content))
      .join('\n');

  it('22 screenshots, one a 1280x9000 full page: each is scaled under 2000 px and the turn goes through', async () => {
    const shots = Array.from({ length: 21 }, (_, i) => picture(`screenshot ${i}`, 2400, 1500));
    const sessionId = await sessionWith([...shots, picture('browser: full page', 1280, 9000)]);
    const calls = anthropic.calls.length;
    const outcome = await fx.run(sessionId, model(), { pictures: createPictureFitter(defaultIntakeLimits) });
    expect(outcome).toEqual({ kind: 'finished', summary: 'Done.' });
    expect(anthropic.rejections).toEqual([]);
    const sent = await sides(anthropic.calls[calls]!.body);
    expect(sent).toHaveLength(22);
    expect(Math.max(...sent)).toBeLessThanOrEqual(2000);
    const stored = (await fx.store.transcript(sessionId)).flatMap((e) =>
      e.message.role === 'assistant' ? [] : (e.message.images ?? []),
    );
    expect(stored.map((i) => Math.max(i.width ?? 0, i.height ?? 0) <= 2000)).toEqual(stored.map(() => true));
  }, 120_000);

  it('103 pictures: the three oldest become notes, the request carries 100', async () => {
    const sessionId = await sessionWith(Array.from({ length: 103 }, (_, i) => picture(`shot ${i}`, 40, 30)));
    const calls = anthropic.calls.length;
    const outcome = await fx.run(sessionId, model(), { pictures: createPictureFitter(defaultIntakeLimits) });
    expect(outcome).toEqual({ kind: 'finished', summary: 'Done.' });
    expect(anthropic.rejections).toEqual([]);
    expect(await sides(anthropic.calls[calls]!.body)).toHaveLength(100);
    const text = await storedText(sessionId);
    for (const name of ['shot 0', 'shot 1', 'shot 2'])
      expect(text).toContain(
        `[A picture was here (${name}, 40×30); it was dropped from the conversation to fit the model's limit of 100 pictures and 24 MB a request.]`,
      );
    expect(text).not.toContain('(shot 3,');
  }, 120_000);

  it('nine 4 MB pictures: the oldest become notes so the request stays under the 32 MB Anthropic takes', async () => {
    const noise = await sharp({
      create: {
        width: 1000,
        height: 1000,
        channels: 3,
        background: '#808080',
        noise: { type: 'gaussian', mean: 128, sigma: 60 },
      },
    })
      .png({ compressionLevel: 0 })
      .toBuffer();
    const heavy = (name: string): ModelImage => ({
      mediaType: 'image/png',
      data: noise.toString('base64'),
      name,
      width: 1000,
      height: 1000,
    });
    const sessionId = await sessionWith(Array.from({ length: 9 }, (_, i) => heavy(`heavy ${i}`)));
    const calls = anthropic.calls.length;
    const outcome = await fx.run(sessionId, model(), { pictures: createPictureFitter(defaultIntakeLimits) });
    expect(outcome).toEqual({ kind: 'finished', summary: 'Done.' });
    expect(anthropic.rejections).toEqual([]);
    const sent = (await sides(anthropic.calls[calls]!.body)).length;
    expect(sent).toBeLessThan(9);
    expect(sent).toBeGreaterThan(0);
    expect(await storedText(sessionId)).toContain('[A picture was here (heavy 0, 1000×1000); it was dropped');
  }, 120_000);

  it('a picture the API refuses is dropped from the transcript with a note, and the turn is tried once more', async () => {
    // Stored without its size, so only the API can tell it is 9000 px tall.
    const sessionId = await sessionWith([picture('small', 40, 30), picture('browser: tall page', 100, 9000, false)]);
    const rejected = anthropic.rejections.length;
    const outcome = await fx.run(sessionId, model(), { pictures: createPictureFitter(defaultIntakeLimits) });
    expect(outcome).toEqual({ kind: 'finished', summary: 'Done.' });
    expect(anthropic.rejections.slice(rejected)).toEqual([
      'messages.2.content.1.content.1.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels',
    ]);
    const text = await storedText(sessionId);
    expect(text).toContain(
      "[A picture was here (browser: tall page); it was dropped from the conversation because the model's API refused it",
    );
    // The next turn sends the rest without it.
    expect(await sides(anthropic.calls.at(-1)!.body)).toEqual([40]);
  }, 120_000);

  const openAIModels: Record<'responses' | 'chat', () => ModelProvider> = {
    responses: () =>
      createOpenAIResponsesProvider({
        model: 'gpt-5',
        apiKey: 'test-openai-key',
        baseUrl: openai.baseUrl,
        maxRetries: 0,
        log: pino({ level: 'silent' }),
      }),
    chat: () =>
      createOpenAIChatProvider({
        model: 'gpt-4.1',
        apiKey: 'test-openai-key',
        baseUrl: openai.baseUrl,
        vision: true,
        maxRetries: 0,
        log: pino({ level: 'silent' }),
      }),
  };
  /** The picture parts of the last request to that endpoint (a part of a message's or a tool output's list). */
  const picturesSent = (endpoint: 'responses' | 'chat') => {
    const body = openai.calls.filter((c) => c.endpoint === endpoint).at(-1)?.body ?? {};
    const items = (endpoint === 'responses' ? body.input : body.messages) as Array<Record<string, unknown>>;
    return items
      .flatMap((item) => [item.content, item.output].flatMap((list) => (Array.isArray(list) ? list : [])))
      .filter((part: { type?: string }) => part.type === 'input_image' || part.type === 'image_url').length;
  };

  describe.each(['responses', 'chat'] as const)('OpenAI (%s) refuses a picture', (endpoint) => {
    it('bytes it cannot decode ("Invalid image.", naming no picture): the newest is dropped with a note, the run finishes', async () => {
      // A PNG cut off midway (an upload that stopped): its header is whole, so nothing before the API notices.
      const whole = Buffer.from(blankPng(40, 30));
      const cut = {
        ...picture('browser: cut off', 40, 30),
        data: whole.subarray(0, whole.length - 20).toString('base64'),
      };
      const sessionId = await sessionWith([picture('small', 40, 30), cut]);
      const rejected = openai.rejections.length;
      const outcome = await fx.run(sessionId, openAIModels[endpoint](), {
        pictures: createPictureFitter(defaultIntakeLimits),
      });
      expect(outcome).toEqual({ kind: 'finished', summary: 'Done.' });
      expect(openai.rejections.slice(rejected)).toEqual(['Invalid image.']);
      expect(await storedText(sessionId)).toContain(
        "[A picture was here (browser: cut off, 40×30); it was dropped from the conversation because the model's API refused it (",
      );
      expect(await storedText(sessionId)).not.toContain('(small, 40×30)');
      expect(picturesSent(endpoint)).toBe(1);
    }, 120_000);

    it('a picture it names by its place (empty bytes): that one is dropped, not the newest', async () => {
      const empty = { ...picture('browser: blank', 40, 30), data: '' };
      const sessionId = await sessionWith([empty, picture('newest', 40, 30)]);
      const rejected = openai.rejections.length;
      const outcome = await fx.run(sessionId, openAIModels[endpoint](), {
        pictures: createPictureFitter(defaultIntakeLimits),
      });
      expect(outcome).toEqual({ kind: 'finished', summary: 'Done.' });
      expect(openai.rejections.slice(rejected)).toEqual([
        expect.stringMatching(
          /^Invalid '(input|messages)\[\d+\]\.(content|output)\[\d+\]\.image_url'\. Expected a base64-encoded data URL/,
        ),
      ]);
      const text = await storedText(sessionId);
      expect(text).toContain('[A picture was here (browser: blank, 40×30); it was dropped from the conversation');
      expect(text).not.toContain('(newest, 40×30)');
      expect(picturesSent(endpoint)).toBe(1);
    }, 120_000);
  });
});
