/** The part of a pino logger a throttle writes through. */
type LevelLog = (fields: object, message: string) => void;

/**
 * Rate-limits one repeating log line (a database that stays away, a queue that keeps failing): the
 * first occurrence is written, then at most one line per `windowMs` saying how many were held back.
 * Without it a lost database grows the log by kilobytes a second.
 */
export function throttleLog(write: LevelLog, windowMs = 30_000, now: () => number = Date.now): LevelLog {
  let lastWritten = -Infinity;
  let held = 0;
  return (fields, message) => {
    const at = now();
    if (at - lastWritten < windowMs) {
      held += 1;
      return;
    }
    write(held > 0 ? { ...fields, repeated: held, windowSeconds: windowMs / 1000 } : fields, message);
    lastWritten = at;
    held = 0;
  };
}
