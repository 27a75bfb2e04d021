import { Component } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, savedAuthor } from '../api.ts';
import { bytes, dateTimeOf, duration, elapsed, safeHref, timeOf, toolGist } from '../format.ts';
import type { Item, SessionModel } from '../session-model.ts';
import { ImageViewer, OpenPicture, picturesOf, ScreenshotPairs, Thumbnails } from './image-viewer.tsx';
import { EgressAllowButtons } from './egress-allow-view.tsx';

type TimelineProps = {
  /** The pages of the log read so far. */
  model: SessionModel;
  /** The whole log's facts: which questions are open. */
  facts: SessionModel;
  version: number;
  sessionId: string;
  older: { more: boolean; loading: boolean };
  loadOlder: () => void;
};

/**
 * The timeline: the newest page of the log, and older pages read as the reader scrolls up to the
 * top (the page stays where it was as they come in). Items the browser cannot see skip layout
 * (`content-visibility`) and tool output is rendered only when opened, so a session of thousands
 * of events and megabytes of output stays responsive.
 */
export function TimelineView({ model, facts, sessionId, older, loadOlder }: TimelineProps) {
  const atBottom = useRef(true);
  const top = useRef<HTMLButtonElement>(null);
  /** Distance from the document's end before an older page went in, to put the reader back. */
  const fromEnd = useRef<number | undefined>(undefined);
  const first = model.firstSeq;
  const shownFirst = useRef(first);

  useLayoutEffect(() => {
    const onScroll = () => {
      atBottom.current = innerHeight + scrollY >= document.documentElement.scrollHeight - 80;
    };
    addEventListener('scroll', onScroll, { passive: true });
    return () => removeEventListener('scroll', onScroll);
  }, []);
  // New items keep the page at the bottom when it was there: following a run needs no scrolling.
  // Older items above keep what the reader was looking at where it was.
  useLayoutEffect(() => {
    const prepended = first !== shownFirst.current;
    shownFirst.current = first;
    if (prepended && fromEnd.current !== undefined) {
      scrollTo({ top: document.documentElement.scrollHeight - fromEnd.current });
      fromEnd.current = undefined;
    } else if (atBottom.current) scrollTo({ top: document.documentElement.scrollHeight });
  });
  // The top of the timeline in view asks for the page before it.
  useEffect(() => {
    const button = top.current;
    if (!button || !older.more) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) load();
    });
    observer.observe(button);
    return () => observer.disconnect();
  }, [older.more, first]);

  const [viewing, setViewing] = useState<number | undefined>();
  const pictures = model.items.flatMap(picturesOf);
  const openPicture = (id: string) => setViewing(pictures.findIndex((p) => p.id === id));

  const load = () => {
    if (older.loading) return;
    atBottom.current = false;
    fromEnd.current = document.documentElement.scrollHeight - scrollY;
    loadOlder();
  };

  return (
    <div class="timeline" aria-live="polite" aria-relevant="additions">
      {older.more && (
        <button type="button" class="earlier" ref={top} onClick={load} disabled={older.loading}>
          {older.loading ? 'Reading earlier events…' : 'Show earlier events'}
        </button>
      )}
      <OpenPicture.Provider value={openPicture}>
        <ol class="items">
          {model.items.map((item) => (
            <ItemRow key={item.key} item={item} sessionId={sessionId} open={facts.openQuestions} />
          ))}
        </ol>
      </OpenPicture.Provider>
      {viewing !== undefined && viewing >= 0 && (
        <ImageViewer
          pictures={pictures}
          index={viewing}
          sessionId={sessionId}
          onMove={setViewing}
          onClose={() => setViewing(undefined)}
        />
      )}
    </div>
  );
}

type RowProps = { item: Item; sessionId: string; open: readonly string[] };

/** Renders again only when its item was replaced (items are immutable) or the open questions changed. */
class ItemRow extends Component<RowProps> {
  override shouldComponentUpdate(next: RowProps) {
    return next.item !== this.props.item || (this.props.item.kind === 'question' && next.open !== this.props.open);
  }
  override render({ item, sessionId, open }: RowProps) {
    return <li class={`item item-${item.kind}`}>{renderItem(item, sessionId, open)}</li>;
  }
}

function Time({ at }: { at: string }) {
  return (
    <time dateTime={at} title={dateTimeOf(at)}>
      {timeOf(at)}
    </time>
  );
}

/** One item of the log as the timeline shows it: a message, a tool call, a question, a note. */
function renderItem(item: Item, sessionId: string, open: readonly string[]) {
  switch (item.kind) {
    case 'user':
      return <UserMessage item={item} sessionId={sessionId} />;
    case 'assistant':
      return <AssistantMessage item={item} />;
    case 'streaming':
      return <StreamingMessage item={item} />;
    case 'tool':
      return (
        <>
          <ToolCall item={item} />
          <Thumbnails pictures={picturesOf(item)} sessionId={sessionId} />
        </>
      );
    case 'screenshots':
      return <ScreenshotPairs item={item} sessionId={sessionId} />;
    case 'question':
      return <Question item={item} sessionId={sessionId} isOpen={open.includes(item.questionId)} />;
    case 'egress':
      return <BlockedConnection item={item} sessionId={sessionId} />;
    case 'status':
      return <StatusLine item={item} />;
    case 'note':
      return <Note item={item} />;
    default: {
      const _never: never = item;
      return _never;
    }
  }
}

type ItemOf<Kind extends Item['kind']> = Extract<Item, { kind: Kind }>;

function UserMessage({ item, sessionId }: { item: ItemOf<'user'>; sessionId: string }) {
  return (
    <div class="msg user">
      <div class="who">
        <b>{item.actor.name}</b> <span class="surface">via {item.actor.source}</span> <Time at={item.at} />
        {item.answers && <span class="tag">answer</span>}
      </div>
      <div class="text">{item.text}</div>
      <Thumbnails pictures={picturesOf(item)} sessionId={sessionId} />
    </div>
  );
}

function AssistantMessage({ item }: { item: ItemOf<'assistant'> }) {
  return (
    <div class="msg assistant">
      <div class="who">
        <b>Patchbay</b> <Time at={item.at} />
      </div>
      <div class="text">{item.text}</div>
    </div>
  );
}

/** The answer being written, as far as it has come. */
function StreamingMessage({ item }: { item: ItemOf<'streaming'> }) {
  return (
    <div class="msg assistant streaming" aria-busy="true">
      <div class="who">
        <b>Patchbay</b> <span class="muted">writing…</span>
      </div>
      <div class="text">
        {item.partial && '…'}
        {item.text}
        <span class="caret" />
      </div>
    </div>
  );
}

/** A connection the sandbox's egress proxy refused; one not on the allow-list can be allowed from here. */
function BlockedConnection({ item, sessionId }: { item: ItemOf<'egress'>; sessionId: string }) {
  return (
    <div class="note tone-bad egress" data-host={item.host}>
      Blocked a connection to <code>{`${item.host}:${item.port}`}</code> ({item.reason}) <Time at={item.at} />
      {item.reason === 'not-allowed' && <EgressAllowButtons sessionId={sessionId} host={item.host} port={item.port} />}
    </div>
  );
}

function StatusLine({ item }: { item: ItemOf<'status'> }) {
  return (
    <div class="status-line">
      <span class={`badge s-${item.to}`}>{item.to}</span>
      {item.reason && <span class="reason">{item.reason}</span>} <Time at={item.at} />
    </div>
  );
}

function Note({ item }: { item: ItemOf<'note'> }) {
  const href = safeHref(item.link?.href);
  return (
    <div class={`note tone-${item.tone}`}>
      {item.text}
      {href && (
        <>
          {' '}
          <a href={href} rel="noreferrer" target="_blank">
            {item.link!.label}
          </a>
        </>
      )}{' '}
      <Time at={item.at} />
    </div>
  );
}

const OUTPUT_PREVIEW = 20_000;

/** Milliseconds since `at`, read again every second while `running`: a long step's timer. */
function useRunningFor(at: string, running: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [running]);
  return now - Date.parse(at);
}

function ToolCall({ item }: { item: ItemOf<'tool'> }) {
  const [open, setOpen] = useState(false);
  const [full, setFull] = useState(false);
  const runningFor = useRunningFor(item.at, !item.end);
  const state = !item.end
    ? `running · ${elapsed(runningFor)}`
    : `${item.end.isError ? 'failed' : 'ok'} · ${duration(item.end.durationMs)}`;
  const output = item.end?.output ?? '';
  return (
    <details
      class={`tool${item.end?.isError ? ' failed' : ''}${item.end ? '' : ' running'}`}
      data-call={item.callId}
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary>
        <span class="name">{item.name}</span>{' '}
        <code class="gist">{toolGist(item.name, item.input, item.end?.output)}</code> <span class="state">{state}</span>
      </summary>
      {open && (
        <div class="tool-body">
          {item.input !== undefined && <pre class="input">{JSON.stringify(item.input, null, 2)}</pre>}
          {item.end && (
            <>
              <pre class="output">{full ? output : output.slice(0, OUTPUT_PREVIEW)}</pre>
              {!full && output.length > OUTPUT_PREVIEW && (
                <button type="button" class="link" onClick={() => setFull(true)}>
                  Show all output ({bytes(output.length)})
                </button>
              )}
            </>
          )}
        </div>
      )}
    </details>
  );
}

function Question({ item, sessionId, isOpen }: { item: ItemOf<'question'>; sessionId: string; isOpen: boolean }) {
  const [sending, setSending] = useState<string | undefined>();
  const [error, setError] = useState('');
  const answer = async (text: string) => {
    setSending(text);
    setError('');
    try {
      const author = savedAuthor();
      await api.send(sessionId, { text, questionId: item.questionId, ...(author && { author }) });
    } catch (err) {
      setError((err as Error).message);
      setSending(undefined);
    }
  };
  return (
    <div class="question" data-question={item.questionId}>
      <div class="who">
        <b>Patchbay asks</b> <Time at={item.at} />
      </div>
      <div class="text">{item.question}</div>
      {item.answer ? (
        <div class="answered">
          Answered by <b>{item.answer.actor.name}</b>: {item.answer.text}
        </div>
      ) : (
        isOpen &&
        item.choices.length > 0 && (
          <div class="choices">
            {item.choices.map((choice) => (
              <button
                type="button"
                class={choice === item.recommended ? 'choice recommended' : 'choice'}
                disabled={sending !== undefined}
                onClick={() => answer(choice)}
              >
                {choice}
                {choice === item.recommended && <span class="rec"> (recommended)</span>}
              </button>
            ))}
          </div>
        )
      )}
      {error && <p class="error">{error}</p>}
    </div>
  );
}
