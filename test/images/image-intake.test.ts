import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImageIntake } from '../../src/core/attachment.ts';
import { sniffImageType } from '../../src/core/image-format.ts';
import { createImageIntake, defaultIntakeLimits } from '../../src/sessions/inbound/image-intake.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { solidPng } from './images-app.ts';

/** Noise compresses badly: a picture that is large in bytes, not only in pixels. */
function noisePng(width: number, height: number): Promise<Buffer> {
  const raw = randomBytes(width * height * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

describe('the image format is read from the bytes, whatever the name says', () => {
  it.each([
    ['PNG', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0], 'image/png'],
    ['JPEG', [0xff, 0xd8, 0xff, 0xe0, 0], 'image/jpeg'],
    ['GIF89a', [...Buffer.from('GIF89a'), 0], 'image/gif'],
    ['GIF87a', [...Buffer.from('GIF87a'), 0], 'image/gif'],
    ['WebP', [...Buffer.from('RIFF'), 1, 2, 3, 4, ...Buffer.from('WEBP')], 'image/webp'],
    ['a RIFF that is not WebP (WAV)', [...Buffer.from('RIFF'), 1, 2, 3, 4, ...Buffer.from('WAVE')], undefined],
    ['text', [...Buffer.from('hello, this is a .png')], undefined],
    ['SVG', [...Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')], undefined],
    ['empty', [], undefined],
  ])('%s', (_name, bytes, expected) => {
    expect(sniffImageType(new Uint8Array(bytes))).toBe(expected);
  });
});

describe('the image intake keeps pictures the model can take', () => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let intake: ImageIntake;
  let artifacts: ReturnType<typeof createPgArtifactStore>;
  beforeAll(async () => {
    handle = await createTestDatabase();
    artifacts = createPgArtifactStore(handle.db);
    intake = createImageIntake({ artifacts, limits: { ...defaultIntakeLimits, maxPerMessage: 2 } });
  });
  afterAll(() => handle?.close());

  it('keeps a small PNG as it is, once per source, and gives it its session when the message lands', async () => {
    const png = await solidPng(20, 10);
    const file = { sourceKey: 'test:F1', name: 'shot.png', bytes: png };
    const [first] = await intake.take([file]);
    const [again] = await intake.take([file]);
    expect(first).toEqual({
      kind: 'kept',
      attachment: { artifactId: expect.any(String), mediaType: 'image/png', name: 'shot.png', byteSize: png.length },
    });
    expect(again).toEqual(first);
    const id = first?.kind === 'kept' ? first.attachment.artifactId : '';
    // Waiting for its session, it is no session's artifact yet.
    expect(await artifacts.get(id)).toBeUndefined();
    const sessions = createSessionStore(handle.db);
    await sessions.create({
      id: 's-1',
      repo: 'r',
      prompt: 'p',
      title: 't',
      requester: { source: 'web', id: 'a', name: 'A' },
      thread: { source: 'web' },
    });
    await artifacts.attach('s-1', [id]);
    const kept = await artifacts.get(id);
    expect(kept).toMatchObject({ sessionId: 's-1', kind: 'attachment', width: 20, height: 10 });
    expect(Buffer.from(kept!.bytes).equals(png)).toBe(true);
  });

  it('scales a large picture to 1568 px on its long side', async () => {
    const [result] = await intake.take([{ sourceKey: 'test:F2', name: 'wide.png', bytes: await solidPng(4000, 1000) }]);
    expect(result).toMatchObject({ kind: 'kept', attachment: { mediaType: 'image/png' } });
    const meta = await metaOf(result!);
    expect([meta.width, meta.height]).toEqual([1568, 392]);
  });

  it('re-encodes a picture over the model byte cap as JPEG under it', async () => {
    const small = createImageIntake({
      artifacts,
      limits: { ...defaultIntakeLimits, maxSide: 800, maxModelBytes: 400_000 },
    });
    const noisy = await noisePng(800, 600);
    expect(noisy.length).toBeGreaterThan(400_000);
    const [result] = await small.take([{ sourceKey: 'test:F3', name: 'noisy.png', bytes: noisy }]);
    expect(result).toMatchObject({ kind: 'kept', attachment: { mediaType: 'image/jpeg' } });
    expect(result?.kind === 'kept' && result.attachment.byteSize).toBeLessThanOrEqual(400_000);
  });

  it('refuses a non-image, an oversized file and pictures over the count, with reasons', async () => {
    const tight = createImageIntake({
      artifacts,
      limits: { ...defaultIntakeLimits, maxBytes: 1000, maxPerMessage: 2 },
    });
    const results = await tight.take([
      { sourceKey: 'test:F4', name: 'notes.png', bytes: Buffer.from('not a picture') },
      { sourceKey: 'test:F5', name: 'big.png', bytes: await noisePng(100, 100) },
      { sourceKey: 'test:F6', name: 'third.png', bytes: await solidPng(5, 5) },
    ]);
    expect(results).toEqual([
      { kind: 'refused', name: 'notes.png', reason: 'it is not a PNG, JPEG, GIF or WebP image' },
      { kind: 'refused', name: 'big.png', reason: 'it is larger than the 1 KB limit' },
      { kind: 'refused', name: 'third.png', reason: 'a message may carry at most 2 images' },
    ]);
  });

  async function metaOf(result: Awaited<ReturnType<ImageIntake['take']>>[number]) {
    if (result.kind !== 'kept') throw new Error('not kept');
    const row = await handle.db
      .selectFrom('session_artifacts')
      .select('bytes')
      .where('id', '=', result.attachment.artifactId)
      .executeTakeFirstOrThrow();
    return sharp(row.bytes).metadata();
  }
});
