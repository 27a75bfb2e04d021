import { createHash } from 'node:crypto';

/**
 * A UUID v4-shaped id derived from a string, so the same activity of the same delivery always has
 * the same id and a repeated post is recognised by Linear instead of shown twice.
 */
export function stableUuid(seed: string): string {
  const h = createHash('sha256').update(seed).digest();
  h[6] = (h[6]! & 0x0f) | 0x40;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
