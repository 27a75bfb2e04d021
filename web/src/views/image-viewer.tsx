import { createContext } from 'preact';
import { useContext, useEffect, useRef } from 'preact/hooks';
import type { Item } from '../session-model.ts';

/** A picture on the timeline: an artifact of the session, with what to call it. */
export type Picture = { id: string; label: string };

/** How the timeline's pictures open the viewer; the timeline provides it. */
export const OpenPicture = createContext<(id: string) => void>(() => undefined);

/** The artifact id the screenshot tool named in its output ("Kept with the session as artifact <id>."). */
const KEPT_AS = /as artifact ([A-Za-z0-9_-]{16,})\./;
/** Tools whose answer keeps a picture with the session (its id in the answer). */
const PICTURE_TOOLS = new Set(['screenshot', 'browser_screenshot']);

/** The pictures an item shows: a screenshot step's picture, or each page's before and after. */
export function picturesOf(item: Item): Picture[] {
  if (item.kind === 'user')
    return (item.attachments ?? []).map((a) => ({ id: a.artifactId, label: `${item.actor.name}: ${a.name}` }));
  if (item.kind === 'tool' && PICTURE_TOOLS.has(item.name) && item.end && !item.end.isError) {
    const id = KEPT_AS.exec(item.end.output)?.[1];
    return id ? [{ id, label: item.end.output.split(' (')[0] ?? 'Screenshot' }] : [];
  }
  if (item.kind === 'screenshots')
    return item.pages.flatMap((page) => [
      ...(page.before ? [{ id: page.before, label: `Before: ${page.url}` }] : []),
      ...(page.after ? [{ id: page.after, label: `After: ${page.url}` }] : []),
    ]);
  return [];
}

/** Where the page reads a picture: behind its own sign-in, so no signed link is needed. */
export function pictureSrc(sessionId: string, id: string): string {
  return `/api/sessions/${encodeURIComponent(sessionId)}/artifacts/${encodeURIComponent(id)}`;
}

/** Thumbnails that open the viewer when clicked. */
export function Thumbnails({ pictures, sessionId }: { pictures: Picture[]; sessionId: string }) {
  const open = useContext(OpenPicture);
  if (pictures.length === 0) return null;
  return (
    <div class="thumbs">
      {pictures.map((picture) => (
        <button type="button" class="thumb" key={picture.id} title={picture.label} onClick={() => open(picture.id)}>
          <img src={pictureSrc(sessionId, picture.id)} alt={picture.label} loading="lazy" />
          <span class="thumb-label">{picture.label}</span>
        </button>
      ))}
    </div>
  );
}

/** Before and after of each page a UI change touched, side by side. */
export function ScreenshotPairs({
  item,
  sessionId,
}: {
  item: Extract<Item, { kind: 'screenshots' }>;
  sessionId: string;
}) {
  return (
    <div class="note tone-info screenshots">
      Before/after screenshots
      {item.pages.map((page) => (
        <div class="pair" key={page.url}>
          <code>{page.url}</code>
          {page.note && <span class="muted"> ({page.note})</span>}
          <Thumbnails pictures={picturesOf({ ...item, pages: [page] })} sessionId={sessionId} />
        </div>
      ))}
    </div>
  );
}

/**
 * The larger view of one of the timeline's pictures: Esc (or the close button) closes it, the
 * arrow keys (and the buttons) go to the previous and next picture.
 */
export function ImageViewer(props: {
  pictures: Picture[];
  index: number;
  sessionId: string;
  onMove: (index: number) => void;
  onClose: () => void;
}) {
  const { pictures, index, onMove, onClose } = props;
  const picture = pictures[index];
  const step = (by: number) => onMove((index + by + pictures.length) % pictures.length);
  // One listener for the viewer's life, reading the latest step and close through a ref.
  const keys = useRef({ step, onClose });
  keys.current = { step, onClose };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') keys.current.onClose();
      else if (e.key === 'ArrowLeft') keys.current.step(-1);
      else if (e.key === 'ArrowRight') keys.current.step(1);
      else return;
      e.preventDefault();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  if (!picture) return null;
  return (
    <div class="viewer" role="dialog" aria-modal="true" aria-label={picture.label}>
      <figure>
        <img src={pictureSrc(props.sessionId, picture.id)} alt={picture.label} />
        <figcaption>
          {picture.label}{' '}
          <span class="muted">
            ({index + 1} of {pictures.length})
          </span>
        </figcaption>
      </figure>
      {pictures.length > 1 && (
        <>
          <button type="button" class="viewer-prev" aria-label="Previous picture" onClick={() => step(-1)}>
            ‹
          </button>
          <button type="button" class="viewer-next" aria-label="Next picture" onClick={() => step(1)}>
            ›
          </button>
        </>
      )}
      <button type="button" class="viewer-close" aria-label="Close" onClick={onClose}>
        ×
      </button>
    </div>
  );
}
