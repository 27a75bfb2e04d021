import { inflateSync } from 'node:zlib';

/** A decoded 8-bit PNG (grey, RGB, grey+alpha or RGBA; not interlaced), for tests that check pixels. */
export type Pixels = { width: number; height: number; at(x: number, y: number): [number, number, number] };

const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

/** Decodes a PNG with node:zlib: the IDAT chunks joined and inflated, then each scanline unfiltered. */
export function decodePng(png: Buffer): Pixels {
  let offset = 8;
  let width = 0;
  let height = 0;
  let colorType = 0;
  const data: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const body = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      if (body[8] !== 8 || body[12] !== 0) throw new Error('only 8-bit, non-interlaced PNGs are decoded here');
      colorType = body[9] ?? 0;
    }
    if (type === 'IDAT') data.push(body);
    offset += 12 + length;
  }
  const channels = CHANNELS[colorType];
  if (!channels) throw new Error(`PNG colour type ${colorType} is not decoded here`);
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)] ?? 0;
    for (let i = 0; i < stride; i++) {
      const value = raw[y * (stride + 1) + 1 + i] ?? 0;
      const left = i >= channels ? (out[y * stride + i - channels] ?? 0) : 0;
      const up = y > 0 ? (out[(y - 1) * stride + i] ?? 0) : 0;
      const upLeft = y > 0 && i >= channels ? (out[(y - 1) * stride + i - channels] ?? 0) : 0;
      out[y * stride + i] = (value + predict(filter, left, up, upLeft)) & 0xff;
    }
  }
  return {
    width,
    height,
    at(x, y) {
      const p = y * stride + x * channels;
      if (channels < 3) return [out[p] ?? 0, out[p] ?? 0, out[p] ?? 0];
      return [out[p] ?? 0, out[p + 1] ?? 0, out[p + 2] ?? 0];
    },
  };
}

function predict(filter: number, left: number, up: number, upLeft: number): number {
  switch (filter) {
    case 0:
      return 0;
    case 1:
      return left;
    case 2:
      return up;
    case 3:
      return Math.floor((left + up) / 2);
    case 4: {
      const p = left + up - upLeft;
      const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
      return pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
    }
    default:
      throw new Error(`unknown PNG filter ${filter}`);
  }
}
