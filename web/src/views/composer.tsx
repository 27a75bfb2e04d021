import { useState } from 'preact/hooks';
import type { SessionStatus } from '../../../src/core/session-status.ts';
import { api, saveAuthorName, savedAuthor } from '../api.ts';
import type { SessionModel } from '../session-model.ts';

/** A picture chosen for the next message, read in the browser as base64. */
type Chosen = { name: string; data: string };

/** Reads image files (dropped, pasted or picked) as base64; other files are left out. */
async function readImages(files: Iterable<File>): Promise<Chosen[]> {
  const images = [...files].filter((file) => file.type.startsWith('image/'));
  return Promise.all(
    images.map(async (file) => {
      const bytes = new Uint8Array(await file.arrayBuffer());
      let binary = '';
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return { name: file.name || 'pasted image', data: btoa(binary) };
    }),
  );
}

/** The pictures chosen for the next message, and `add` for files dropped, pasted or picked. */
function useChosenImages() {
  const [images, setImages] = useState<Chosen[]>([]);
  const add = async (files: Iterable<File> | null | undefined) => {
    if (!files) return;
    const read = await readImages(files);
    if (read.length > 0) setImages((chosen) => [...chosen, ...read]);
  };
  return { images, setImages, add };
}

/** The open questions, and the one the next message answers: the oldest unless the reader picked another. */
function useAnswering(model: SessionModel) {
  const [answering, setAnswering] = useState<string | undefined>();
  const questions = model.openQuestionList;
  const question = (questions.find((q) => q.questionId === answering) ?? questions[0])?.questionId;
  return { questions, question, setAnswering };
}

/**
 * The message box: steers a running session, answers its open question, or follows up on a
 * finished one. Messages go through the API like any other surface, signed with the name given here.
 * Pictures dropped on it, pasted into it or picked with "Attach" go with the message; the server
 * checks them as it checks every surface's (a refused one refuses the message, with the reason).
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
  const { images, setImages, add } = useChosenImages();
  const { questions, question, setAnswering } = useAnswering(model);

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
        ...(images.length > 0 && { images }),
      });
      setText('');
      setImages([]);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const verb = question ? 'Answer' : status === 'running' || status === 'queued' ? 'Steer' : 'Send';
  return (
    <form
      class="composer card"
      onSubmit={send}
      onDragOver={(e) => e.preventDefault()}
      onDrop={(e) => {
        e.preventDefault();
        void add(e.dataTransfer?.files);
      }}
    >
      {questions.length > 1 && <AnsweringChoice questions={questions} value={question} onChange={setAnswering} />}
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
        onPaste={(e) => void add(e.clipboardData?.files)}
      />
      <ChosenImages images={images} onRemove={(index) => setImages((chosen) => chosen.filter((_, i) => i !== index))} />
      <ComposerRow name={name} setName={setName} onFiles={add} verb={verb} disabled={busy || !text.trim()} />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** Which open question the next message answers, when more than one is open. */
function AnsweringChoice({
  questions,
  value,
  onChange,
}: {
  questions: { questionId: string; question: string }[];
  value: string | undefined;
  onChange: (questionId: string) => void;
}) {
  return (
    <div class="composer-row answering">
      <label for="answering">Answering</label>
      <select id="answering" value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {questions.map((q) => (
          <option key={q.questionId} value={q.questionId}>
            {q.question}
          </option>
        ))}
      </select>
    </div>
  );
}

/** The pictures that go with the next message, each with a button that takes it off. */
function ChosenImages({ images, onRemove }: { images: Chosen[]; onRemove: (index: number) => void }) {
  if (images.length === 0) return null;
  return (
    <ul class="chosen-images" aria-label="Pictures to send">
      {images.map((image, index) => (
        <li key={`${image.name}-${index}`}>
          {image.name}{' '}
          <button type="button" aria-label={`Remove ${image.name}`} onClick={() => onRemove(index)}>
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

/** The sender's name, the picture picker and the send button. */
function ComposerRow({
  name,
  setName,
  onFiles,
  verb,
  disabled,
}: {
  name: string;
  setName: (name: string) => void;
  onFiles: (files: FileList | null) => Promise<void>;
  verb: string;
  disabled: boolean;
}) {
  return (
    <div class="composer-row">
      <label for="name">Name</label>
      <input id="name" value={name} placeholder="your name" onInput={(e) => setName(e.currentTarget.value)} />
      <label class="attach">
        Attach
        <input
          id="attach"
          type="file"
          accept="image/png,image/jpeg,image/gif,image/webp"
          multiple
          onChange={(e) => {
            void onFiles(e.currentTarget.files);
            e.currentTarget.value = '';
          }}
        />
      </label>
      <button id="send" type="submit" disabled={disabled}>
        {verb}
      </button>
    </div>
  );
}
