import { useState } from 'preact/hooks';
import { api, savedAuthor } from '../api.ts';
import type { SessionModel } from '../session-model.ts';

/**
 * The held command waiting for a decision: the exact command, why it was held and what approving
 * does, with Approve once and Deny (and an optional reason). Nothing when no request is open.
 */
export function ApprovalPanel({ sessionId, model }: { sessionId: string; model: SessionModel; version: number }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const open = model.openApproval;
  if (!open) return null;

  const decide = async (decision: 'approved' | 'denied') => {
    setBusy(true);
    setError('');
    try {
      const author = savedAuthor();
      await api.decide(sessionId, open.requestId, {
        decision,
        ...(decision === 'denied' && reason.trim() && { reason: reason.trim() }),
        ...(author && { author }),
      });
      setReason('');
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="approval card" aria-label="Approval needed">
      <h3>Approval needed ({open.classes.join(', ')})</h3>
      <pre class="approval-command">{open.command}</pre>
      <ul>
        {open.reasons.map((r) => (
          <li>{r}</li>
        ))}
      </ul>
      <p class="muted">{open.approving}</p>
      <div class="composer-row">
        <label for="deny-reason">Reason</label>
        <input
          id="deny-reason"
          value={reason}
          placeholder="why not (optional, for Deny)"
          onInput={(e) => setReason(e.currentTarget.value)}
        />
        <button id="approve" type="button" disabled={busy} onClick={() => void decide('approved')}>
          Approve once
        </button>
        <button id="deny" type="button" class="danger" disabled={busy} onClick={() => void decide('denied')}>
          Deny
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
