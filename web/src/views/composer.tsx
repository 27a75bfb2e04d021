import { useState } from 'preact/hooks';
import type { SessionStatus } from '../../../src/core/session-status.ts';
import { api, saveAuthorName, savedAuthor } from '../api.ts';
import type { SessionModel } from '../session-model.ts';

/**
 * The message box: steers a running session, answers its open question, or follows up on a
 * finished one. Messages go through the API like any other surface, signed with the name given here.
 */
export function Composer({
  sessionId,
  model,
  status,
}: {
  sessionId: string;
  model: SessionModel;
  version: number;
  status: SessionStatus | undefined;
}) {
  const [text, setText] = useState('');
  const [name, setName] = useState(savedAuthor()?.name ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const question = model.openQuestion;

  const send = async (event?: Event) => {
    event?.preventDefault();
    if (!text.trim() || busy) return;
    setBusy(true);
    setError('');
    saveAuthorName(name);
    try {
      const author = savedAuthor();
      await api.send(sessionId, {
        text: text.trim(),
        ...(question && { questionId: question }),
        ...(author && { author }),
      });
      setText('');
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const verb = question ? 'Answer' : status === 'running' || status === 'queued' ? 'Steer' : 'Send';
  return (
    <form class="composer card" onSubmit={send}>
      <label for="message" class="sr-only">
        Message
      </label>
      <textarea
        id="message"
        rows={2}
        placeholder={question ? 'Answer the question…' : 'Message Patchbay (Ctrl+Enter to send)'}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send();
          if (e.key === 'Escape') e.currentTarget.blur();
        }}
      />
      <div class="composer-row">
        <label for="name">Name</label>
        <input id="name" value={name} placeholder="your name" onInput={(e) => setName(e.currentTarget.value)} />
        <button id="send" type="submit" disabled={busy || !text.trim()}>
          {verb}
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
