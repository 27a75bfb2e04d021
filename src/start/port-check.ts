import { createServer } from 'node:net';
import { PatchbayError } from '../core/errors.ts';

/** The one line an operator gets for a port another process holds. */
export function portInUse(port: number, cause?: unknown): PatchbayError {
  return new PatchbayError(
    'config_invalid',
    `PORT ${port} is already in use (another Patchbay or another server is listening there): stop it, or set PORT to a free port`,
    { cause },
  );
}

/**
 * Fails fast, before the database and the sandboxes start, when `port` cannot be bound on `host`.
 * The real listen later can still lose a race; it reports the same line (listenError).
 */
export async function assertPortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? portInUse(port, error) : error),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Maps a listen failure on a busy port to the operator's one line; other errors pass through. */
export function listenError(port: number, error: unknown): unknown {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE' ? portInUse(port, error) : error;
}
