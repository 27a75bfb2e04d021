import { crc32, deflateSync } from 'node:zlib';

/**
 * A one-bit greyscale PNG of `width`×`height` blank pixels: a few kilobytes on the wire,
 * `width`×`height` pixels to decode (what a compression bomb is).
 */
export function blankPng(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([head, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.writeUInt8(1, 8); // bit depth 1, colour type 0 (greyscale)
  const rows = Buffer.alloc((1 + Math.ceil(width / 8)) * height); // filter byte 0 and blank pixels, per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
