import { describe, expect, it } from 'vitest';
import type { ModelImage } from '../../src/core/transcript.ts';
import { verifyChange } from '../../src/harness/verify/verifier.ts';
import { passingVerdict, scriptedVerifier } from '../helpers/scripted-verifier.ts';

const shot = (name: string): ModelImage => ({
  mediaType: 'image/png',
  data: 'iVBORw0KGgo=',
  name,
  width: 2,
  height: 1,
});

describe('the verifier and a UI change', () => {
  const input = {
    task: 'Make the button blue',
    knowledge: '',
    checks: [],
    change: '-red\n+blue',
    signal: new AbortController().signal,
  };

  it('gets the before/after screenshots as images beside the diff', async () => {
    const model = scriptedVerifier(passingVerdict);
    const images = [
      shot('before: screenshot of http://127.0.0.1:8000/'),
      shot('after: screenshot of http://127.0.0.1:8000/'),
    ];
    const result = await verifyChange(model, { ...input, images });
    expect(result.kind).toBe('verdict');
    const [message] = model.requests[0]?.messages ?? [];
    expect(message?.role === 'user' && message.images).toEqual(images);
    expect(message?.content).toContain('# Screenshots');
  });

  it('gets no images and no screenshots heading for a change without them', async () => {
    const model = scriptedVerifier(passingVerdict);
    await verifyChange(model, input);
    const [message] = model.requests[0]?.messages ?? [];
    expect(message?.role === 'user' && message.images).toBeUndefined();
    expect(message?.content).not.toContain('# Screenshots');
  });
});
