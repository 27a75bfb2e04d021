import { PatchbayError } from '../../src/core/errors.ts';

/**
 * Modal's failures as run-ending reasons a person can act on. The SDK throws its own classes
 * (NotFoundError, ResourceExhaustedError, ConflictError, …) for some cases and nice-grpc's
 * ClientError (with a numeric `code`) for the rest; both are read by name and code, never by
 * importing the classes, so this module stays a pure function of what was thrown.
 */
const GRPC = {
  UNAUTHENTICATED: 16,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  NOT_FOUND: 5,
  FAILED_PRECONDITION: 9,
  UNAVAILABLE: 14,
  DEADLINE_EXCEEDED: 4,
  INVALID_ARGUMENT: 3,
} as const;

export function modalError(error: unknown, during: string): PatchbayError {
  if (error instanceof PatchbayError) return error;
  const err = error as { name?: string; code?: unknown; details?: string; message?: string };
  const detail = (err.details || err.message || String(error)).trim().slice(0, 500);
  const code = typeof err.code === 'number' ? err.code : undefined;
  const name = err.name ?? '';
  if (code === GRPC.UNAUTHENTICATED || code === GRPC.PERMISSION_DENIED) {
    return new PatchbayError(
      'sandbox_unavailable',
      `Modal refused the credentials while ${during} (${detail}): check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET`,
      { cause: error },
    );
  }
  if (code === GRPC.RESOURCE_EXHAUSTED || name === 'ResourceExhaustedError') {
    return new PatchbayError(
      'sandbox_unavailable',
      `Modal has no capacity or quota left while ${during} (${detail}); try again later or raise the workspace's limits`,
      { cause: error, retryable: true },
    );
  }
  if (/Image build for .* failed|image build/i.test(detail)) {
    return new PatchbayError(
      'sandbox_unavailable',
      `The Modal image failed to build while ${during} (${detail}): check MODAL_IMAGE`,
      { cause: error },
    );
  }
  if (name === 'TimeoutError' || code === GRPC.DEADLINE_EXCEEDED) {
    return new PatchbayError('timeout', `Modal did not answer in time while ${during} (${detail})`, {
      cause: error,
      retryable: true,
    });
  }
  if (code === GRPC.UNAVAILABLE || /ECONNREFUSED|No connection established/i.test(detail)) {
    return new PatchbayError(
      'sandbox_unavailable',
      `Modal could not be reached while ${during} (${detail}): check MODAL_SERVER_URL and the network`,
      { cause: error, retryable: true },
    );
  }
  return new PatchbayError('sandbox_failed', `Modal failed while ${during}: ${detail}`, { cause: error });
}

/** Why a sandbox ended, from the exit code Modal's SDK reports for it (`Sandbox.poll()`). */
export function describeSandboxEnd(exitCode: number): string {
  if (exitCode === 124) return 'it reached its time limit (MODAL_SANDBOX_TIMEOUT_MINUTES)';
  if (exitCode === 137) return 'it was terminated (by Modal, the reaper or someone on the Modal dashboard)';
  return `its container exited with code ${exitCode}`;
}
