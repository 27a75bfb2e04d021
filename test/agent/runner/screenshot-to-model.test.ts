import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../../src/models/anthropic-provider.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../../fakes/fake-anthropic.ts';
import { decodePng } from '../png-pixels.ts';
import { createRunnerFixture, type RunnerFixture } from './runner-fixture.ts';

const PAGE = `<!doctype html><html><body style="margin:0;background:#fff">
<button style="position:absolute;left:0;top:0;width:300px;height:120px;border:0;background:#ff0000">Pay</button>
</body></html>`;

/**
 * The runner, the real tools in a real sandbox and the Anthropic provider against the fake API:
 * the model calls `screenshot`, and its next request holds the picture inside the tool_result.
 */
describe('a screenshot reaches the model through the runner', () => {
  let fx: RunnerFixture;
  let anthropic: FakeAnthropic;
  beforeAll(async () => {
    fx = await createRunnerFixture();
    anthropic = await startFakeAnthropic({
      script: (_request, index) =>
        index === 0
          ? {
              content: [
                {
                  type: 'tool_use',
                  id: 'toolu_shot',
                  name: 'screenshot',
                  input: {
                    url: 'http://localhost:8141/',
                    width: 800,
                    height: 600,
                    server: 'cd site && exec python3 -m http.server 8141 --bind 127.0.0.1',
                  },
                },
              ],
              stopReason: 'tool_use',
            }
          : { content: [{ type: 'text', text: 'The button is red.' }] },
    });
  });
  afterAll(async () => {
    await anthropic?.close();
    await fx?.close();
  });

  it('hands the model the PNG as an image block in the tool result, and keeps it in the transcript', async () => {
    const model = createAnthropicProvider({
      model: 'claude-sonnet-4-6',
      apiKey: 'test-anthropic-key',
      baseUrl: anthropic.baseUrl,
      maxRetries: 0,
      log: pino({ level: 'silent' }),
    });
    const sessionId = await fx.newSession('Is the pay button red?');
    await (await fx.sandboxFor(sessionId)).writeFile('site/index.html', PAGE);
    const outcome = await fx.run(sessionId, model);
    expect(outcome).toEqual({ kind: 'finished', summary: 'The button is red.' });
    expect(anthropic.rejections).toEqual([]);

    const last = anthropic.calls[1]?.body.messages.at(-1);
    const result = Array.isArray(last?.content) ? last.content.find((b) => b.type === 'tool_result') : undefined;
    expect(result).toMatchObject({ tool_use_id: 'toolu_shot' });
    const blocks = (result?.content ?? []) as Array<{ type: string; source?: { media_type: string; data: string } }>;
    expect(blocks.map((b) => b.type)).toEqual(['text', 'image']);
    expect(blocks[1]?.source?.media_type).toBe('image/png');
    const pixels = decodePng(Buffer.from(blocks[1]?.source?.data ?? '', 'base64'));
    expect([pixels.width, pixels.height]).toEqual([800, 600]);
    const [r, g, b] = pixels.at(30, 100);
    expect([r > 220, g < 40, b < 40]).toEqual([true, true, true]);
    expect(pixels.at(700, 500)).toEqual([255, 255, 255]);

    const stored = (await fx.store.transcript(sessionId)).map((e) => e.message);
    const toolMessage = stored.find((m) => m.role === 'tool');
    expect(toolMessage?.role === 'tool' && toolMessage.images?.[0]?.data).toBe(blocks[1]?.source?.data);
  }, 120_000);
});
