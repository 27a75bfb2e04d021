import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Checks an `Authorization: Bearer <token>` header against the configured token in constant time.
 * Both sides are hashed first so that neither the comparison nor an early length check reveals
 * how much of the token matched.
 */
export function createBearerCheck(token: string): (header: string | undefined) => boolean {
  const expected = digest(token);
  return (header) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    const given = digest(match?.[1] ?? '');
    return timingSafeEqual(given, expected) && match !== null;
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
