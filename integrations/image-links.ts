import { createHash } from 'node:crypto';
import {
  type AttachmentRef,
  type ImageIntake,
  type QuotedSource,
  type RefusedFile,
  splitIntake,
} from '../src/core/attachment.ts';
import { downloadFile, isAllowedHost } from './attachment-download.ts';

/** Markdown images `![alt](url)` and HTML `<img src="url">`, as people paste screenshots on GitHub and Linear. */
const MARKDOWN_IMAGE = /!\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
const HTML_IMAGE = /<img\b[^>]*?\bsrc\s*=\s*["']([^"']+)["'][^>]*>/gi;

/** An image a body links to. */
export type ImageLink = { url: string; name: string };

/** The images a comment or issue body shows, in order, each URL once. */
export function imageLinksIn(text: string): ImageLink[] {
  const found: { at: number; link: ImageLink }[] = [];
  for (const m of text.matchAll(MARKDOWN_IMAGE))
    found.push({ at: m.index, link: { url: m[2]!, name: m[1] || nameOf(m[2]!) } });
  for (const m of text.matchAll(HTML_IMAGE)) found.push({ at: m.index, link: { url: m[1]!, name: nameOf(m[1]!) } });
  const seen = new Set<string>();
  return found
    .sort((a, b) => a.at - b.at)
    .map((f) => f.link)
    .filter((l) => !seen.has(l.url) && Boolean(seen.add(l.url)));
}

/** Where a service's linked images may be fetched from, and the authorization it wants for them. */
export type LinkedImageDeps = {
  intake: ImageIntake;
  hosts: readonly string[];
  /** The Authorization header for the service's hosts (asked only when a link is on one of them). */
  authorization: () => Promise<string | undefined>;
  /** Names the source of each image (`github:owner/repo`); with the URL it keys the stored picture. */
  source: string;
  /**
   * When `text` quotes others (an issue another person wrote): the requester's own words, and the
   * texts others wrote, whose pictures are attributed to them.
   */
  quoted?: { own: string; others: readonly QuotedSource[] };
};

/**
 * Takes in the images a text links to: only those on the service's own hosts are fetched (a link
 * elsewhere is refused without a request), each capped and checked by the intake. Keyed by source
 * and URL, so a retried delivery keeps each picture once.
 */
export async function takeLinkedImages(
  deps: LinkedImageDeps,
  text: string,
  signal: AbortSignal,
): Promise<{ attachments: AttachmentRef[]; refused: RefusedFile[] }> {
  const links = imageLinksIn(text);
  const refused: RefusedFile[] = [];
  const files = [];
  const sources: (AttachmentRef['from'] | undefined)[] = [];
  const authorization = links.some((l) => isAllowedHost(l.url, deps.hosts)) ? await deps.authorization() : undefined;
  for (const [index, link] of links.entries()) {
    if (index >= deps.intake.maxPerMessage) {
      refused.push({ name: link.name, reason: `a message may carry at most ${deps.intake.maxPerMessage} images` });
      continue;
    }
    const sourceKey = `${deps.source}:${createHash('sha256').update(link.url).digest('hex').slice(0, 32)}`;
    const got = await downloadFile(
      { sourceKey, name: link.name, url: link.url },
      { allowedHosts: deps.hosts, authorization, maxBytes: deps.intake.maxBytes, signal },
    );
    if (got.kind === 'file') {
      files.push(got.file);
      sources.push(deps.quoted && postedBy(link.url, deps.quoted));
    } else refused.push(got);
  }
  const results = (await deps.intake.take(files)).map((result, i) => {
    const from = sources[i];
    return result.kind === 'kept' && from ? { ...result, attachment: { ...result.attachment, from } } : result;
  });
  const taken = splitIntake(results);
  return { attachments: taken.attachments, refused: [...refused, ...taken.refused] };
}

/**
 * Who posted a picture, when not the person who asked: the author of the quoted text that shows
 * it, unless the requester's own words show it too.
 */
function postedBy(url: string, quoted: NonNullable<LinkedImageDeps['quoted']>): AttachmentRef['from'] {
  const shows = (text: string) => imageLinksIn(text).some((l) => l.url === url);
  const source = shows(quoted.own) ? undefined : quoted.others.find((q) => shows(q.text));
  return source && { author: source.author, where: source.where };
}

function nameOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() || 'image');
  } catch {
    return 'image';
  }
}
