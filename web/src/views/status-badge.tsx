import type { SessionStatus } from '../../../src/core/session-status.ts';

export function StatusBadge({ status }: { status: SessionStatus | undefined }) {
  if (!status) return null;
  return (
    <span class={`badge s-${status}`} data-status={status}>
      {status}
    </span>
  );
}
