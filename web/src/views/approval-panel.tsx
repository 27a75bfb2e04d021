import { useState } from 'preact/hooks';
import { api, savedAuthor } from '../api.ts';
import type { OpenApproval } from '../approval-state.ts';
import type { SessionModel } from '../session-model.ts';

/**
 * The held commands waiting for a decision, one card each (a parent's page shows each sub-task's
 * own): the exact command, why it was held and what approving does, with Approve once and Deny
 * (and an optional reason). Nothing when no request is open.
 */
export function ApprovalPanel({ sessionId, model }: { sessionId: string; model: SessionModel; version: number }) {
  return (
    <>
      {model.openApprovals.map((open, index) => (
        <ApprovalCard key={open.requestId} sessionId={sessionId} open={open} first={index === 0} />
      ))}
    </>
  );
}

/** One request's card; the first keeps the element ids the keyboard and older links use. */
function ApprovalCard({ sessionId, open, first }: { sessionId: string; open: OpenApproval; first: boolean }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const id = (name: string) => (first ? name : `${name}-${open.requestId}`);

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
    <section class="approval card" aria-label="Approval needed" data-request={open.requestId}>
      <h3>Approval needed ({open.classes.join(', ')})</h3>
      <pre class="approval-command">{open.command}</pre>
      <ul>
        {open.reasons.map((r) => (
          <li>{r}</li>
        ))}
      </ul>
      <p class="muted">{open.approving}</p>
      <div class="composer-row">
        <label for={id('deny-reason')}>Reason</label>
        <input
          id={id('deny-reason')}
          value={reason}
          placeholder="why not (optional, for Deny)"
          onInput={(e) => setReason(e.currentTarget.value)}
        />
        <button
          id={id('approve')}
          class="approve"
          type="button"
          disabled={busy}
          onClick={() => void decide('approved')}
        >
          Approve once
        </button>
        <button id={id('deny')} type="button" class="danger deny" disabled={busy} onClick={() => void decide('denied')}>
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
