import { crc32, deflateSync, inflateSync } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Bytes per pixel of the 8-bit colour types Chromium writes: grey, RGB, grey+alpha, RGBA. */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

type Chunk = { type: string; body: Buffer };

/**
 * A full-page screenshot taken in a window taller than the page, cut below the page's content:
 * the rows at the bottom that are all the same as the last one go, down to `minHeight` at most
 * (a page taller than the window keeps all its rows but a plain run at the window's bottom edge).
 * The PNG comes back as it was when it is not one this understands (8-bit, not interlaced).
 */
export function trimBottom(png: Buffer, minHeight: number): Buffer {
  const chunks = readChunks(png);
  const header = chunks[0]?.type === 'IHDR' ? chunks[0].body : undefined;
  const channels = header && header[8] === 8 && header[12] === 0 ? CHANNELS[header[9] ?? -1] : undefined;
  if (!header || !channels) return png;
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const rows = unfilter(
    inflateSync(Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.body))),
    width * channels,
    height,
    channels,
  );
  const last = rows[height - 1];
  let keep = height;
  while (keep > minHeight && last && rows[keep - 1]?.equals(last)) keep -= 1;
  if (keep === height) return png;
  const newHeader = Buffer.from(header);
  newHeader.writeUInt32BE(keep, 4);
  const raw = Buffer.concat(rows.slice(0, keep).flatMap((row) => [Buffer.from([0]), row]));
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', newHeader),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function readChunks(png: Buffer): Chunk[] {
  const chunks: Chunk[] = [];
  if (!png.subarray(0, 8).equals(SIGNATURE)) return chunks;
  for (let offset = 8; offset + 12 <= png.length; ) {
    const length = png.readUInt32BE(offset);
    chunks.push({
      type: png.toString('latin1', offset + 4, offset + 8),
      body: png.subarray(offset + 8, offset + 8 + length),
    });
    offset += 12 + length;
  }
  return chunks;
}

/** The scanlines with PNG's per-row filters undone (filter types 0 to 4). */
function unfilter(raw: Buffer, stride: number, height: number, bpp: number): Buffer[] {
  const rows: Buffer[] = [];
  let previous = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const start = y * (stride + 1);
    const filter = raw[start] ?? 0;
    const row = Buffer.from(raw.subarray(start + 1, start + 1 + stride));
    for (let i = 0; i < stride; i++) {
      const left = i >= bpp ? (row[i - bpp] ?? 0) : 0;
      const up = previous[i] ?? 0;
      const upLeft = i >= bpp ? (previous[i - bpp] ?? 0) : 0;
      row[i] = ((row[i] ?? 0) + predictor(filter, left, up, upLeft)) & 0xff;
    }
    rows.push(row);
    previous = row;
  }
  return rows;
}

function predictor(filter: number, left: number, up: number, upLeft: number): number {
  if (filter === 1) return left;
  if (filter === 2) return up;
  if (filter === 3) return (left + up) >> 1;
  if (filter === 4) {
    const p = left + up - upLeft;
    const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
    return pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
  }
  return 0;
}

function chunk(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  const typeAndBody = Buffer.concat([Buffer.from(type, 'latin1'), body]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndBody));
  return Buffer.concat([length, typeAndBody, crc]);
}
