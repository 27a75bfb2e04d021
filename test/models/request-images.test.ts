import { describe, expect, it } from 'vitest';
import type { ModelImage, ModelMessage } from '../../src/models/model-provider.ts';
import { dropImage, fitRequestImages, maxSideFor, requestImageLimits } from '../../src/models/request-images.ts';

const image = (name: string, width?: number, height?: number): ModelImage => ({
  mediaType: 'image/png',
  data: 'iVBORw0KGgo=',
  name,
  ...(width !== undefined && { width }),
  ...(height !== undefined && { height }),
});
/** A transcript of one user message per picture. */
const transcript = (images: ModelImage[]): ModelMessage[] =>
  images.map((i) => ({ role: 'user', content: `look at ${i.name}`, images: [i] }));
const names = (messages: readonly ModelMessage[]) =>
  messages.flatMap((m) => (m.role === 'assistant' ? [] : (m.images ?? []).map((i) => i.name)));

/** Anthropic's documented limits: 100 pictures a request, 8000 px a side, 2000 px past 20 pictures. */
describe('the pictures one request may carry', () => {
  it.each([
    { case: '20 pictures at 8000 px: all kept', count: 20, side: 8000, kept: 20 },
    { case: '1 picture at 8001 px: dropped', count: 1, side: 8001, kept: 0 },
    { case: '21 pictures at 2000 px: all kept', count: 21, side: 2000, kept: 21 },
    { case: '21 pictures at 2001 px: all dropped', count: 21, side: 2001, kept: 0 },
    { case: '20 pictures at 2001 px: all kept', count: 20, side: 2001, kept: 20 },
    { case: '100 small pictures: all kept', count: 100, side: 40, kept: 100 },
    { case: '101 small pictures: the oldest dropped', count: 101, side: 40, kept: 100 },
  ])('$case', ({ count, side, kept }) => {
    const messages = transcript(Array.from({ length: count }, (_, i) => image(`p${i}`, side, 10)));
    const fitted = fitRequestImages(messages);
    expect(names(fitted.messages)).toHaveLength(kept);
    expect(fitted.dropped).toBe(count - kept);
    if (kept === 100 && count === 101) expect(names(fitted.messages)[0]).toBe('p1');
  });

  it('keeps the newest pictures within the base64 budget of one request, dropping the oldest', () => {
    const messages = transcript([image('a'), image('b'), image('c')]);
    const fitted = fitRequestImages(messages, { ...requestImageLimits, maxTotalBase64: 25 });
    expect(names(fitted.messages)).toEqual(['b', 'c']);
  });

  it('leaves the transcript as it is (the same array) when every picture fits', () => {
    const messages = transcript([image('a', 1568, 900)]);
    expect(fitRequestImages(messages).messages).toBe(messages);
  });

  it('counts pictures in tool results and user messages alike; a picture of unknown size is kept', () => {
    const messages: ModelMessage[] = [
      ...transcript(Array.from({ length: 20 }, (_, i) => image(`p${i}`, 100, 100))),
      {
        role: 'tool',
        toolCallId: 't',
        name: 'screenshot',
        content: 'shot',
        isError: false,
        images: [image('big', 3840, 2000), image('unknown')],
      },
    ];
    expect(maxSideFor(messages)).toBe(2000);
    const fitted = fitRequestImages(messages);
    expect(names(fitted.messages)).toEqual([...Array.from({ length: 20 }, (_, i) => `p${i}`), 'unknown']);
    expect(fitted.messages.at(-1)?.content).toBe(
      'shot\n[A picture was here (big, 3840×2000); it was dropped from the conversation because a side is over the 2000 px the model takes with 22 pictures in a request.]',
    );
  });

  it('drops a refused picture by its place among all the pictures, with the reason', () => {
    const messages = transcript([image('a'), image('b'), image('c')]);
    const dropped = dropImage(messages, 1, 'because the API refused it');
    expect(names(dropped)).toEqual(['a', 'c']);
    expect(dropped[1]).toEqual({
      role: 'user',
      content: 'look at b\n[A picture was here (b); it was dropped from the conversation because the API refused it.]',
      images: undefined,
    });
  });
});
