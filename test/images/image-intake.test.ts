import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blankPng } from '../helpers/blank-png.ts';
import type { ImageIntake } from '../../src/core/attachment.ts';
import { sniffImageType } from '../../src/core/image-format.ts';
import { createImageIntake, defaultIntakeLimits } from '../../src/sessions/inbound/image-intake.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { solidPng } from './images-app.ts';
import { anthropicMaxImageBytes, imageError } from '../fakes/image-rules.ts';

/** Noise compresses badly: a picture that is large in bytes, not only in pixels. */
function noisePng(width: number, height: number): Promise<Buffer> {
  const raw = randomBytes(width * height * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** The picture decoders running now (a killed one has no command line left, even before it is reaped). */
async function decoders(): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('image-fit-child.ts')) found.push(pid);
  }
  return found;
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

  it('keeps a 4.5 MB PNG only as a picture whose base64 Anthropic takes (its 5 MB counts the base64)', async () => {
    const png = await noisePng(1250, 1200);
    expect(png.length).toBeGreaterThan(4_400_000);
    // As it came: 6 MB of base64, which the Anthropic fake refuses as the API does.
    expect(imageError('image/png', png.toString('base64'), anthropicMaxImageBytes, 'image', 'base64')).toMatch(
      /image exceeds 5 MB maximum: \d+ bytes > 5242880 bytes/,
    );
    const [result] = await intake.take([{ sourceKey: 'test:F9', name: 'big.png', bytes: png }]);
    expect(result).toMatchObject({ kind: 'kept' });
    const id = result?.kind === 'kept' ? result.attachment.artifactId : '';
    const kept = (await handle.db
      .selectFrom('session_artifacts')
      .select(['bytes', 'media_type'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()) as {
      bytes: Buffer;
      media_type: string;
    };
    expect(
      imageError(
        kept.media_type,
        Buffer.from(kept.bytes).toString('base64'),
        anthropicMaxImageBytes,
        'image',
        'base64',
      ),
    ).toBeUndefined();
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

  it('refuses a picture of too many pixels from its header, before anything decodes it', async () => {
    const bomb = blankPng(12_000, 12_000);
    expect(bomb.byteLength).toBeLessThan(100_000);
    const [result] = await intake.take([{ sourceKey: 'test:bomb', name: 'bomb.png', bytes: bomb }]);
    expect(result).toEqual({
      kind: 'refused',
      name: 'bomb.png',
      reason: 'it has 144.0 megapixels (12000×12000); the limit is 64.0 megapixels',
    });
  });

  it('decodes in a process of its own, killed at its time limit while the server goes on', async () => {
    // Within the pixel limit, so it is decoded: too long for the limit, so the decoder is killed.
    const slow = createImageIntake({
      artifacts,
      limits: {
        ...defaultIntakeLimits,
        maxPixels: 200_000_000,
        decode: { cpuSeconds: 5, timeoutMs: 200, heapMb: 256 },
      },
    });
    const [result] = await slow.take([{ sourceKey: 'test:slow', name: 'huge.png', bytes: blankPng(12_000, 12_000) }]);
    expect(result).toEqual({ kind: 'refused', name: 'huge.png', reason: 'reading it took longer than the limit' });
    // Killed, not left to finish: no decoder runs once the answer is in.
    expect(await decoders()).toEqual([]);
    // The server goes on: the next picture is taken as ever.
    const [next] = await intake.take([{ sourceKey: 'test:after', name: 'small.png', bytes: await solidPng(4, 4) }]);
    expect(next?.kind).toBe('kept');
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
