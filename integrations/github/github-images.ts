import { createHash } from 'node:crypto';
import type { AttachmentRef, ImageIntake, RefusedFile } from '../../src/core/attachment.ts';
import { refusalNote } from '../../src/core/attachment.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { downloadFile, isAllowedHost } from '../attachment-download.ts';

/** Markdown images `![alt](url)` and HTML `<img src="url">`, as people paste screenshots on GitHub. */
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

/**
 * Where GitHub serves the pictures people attach, for the configured GitHub: on github.com the
 * user-attachments links and the hosts they redirect to (private-user-images, user-images, raw);
 * on GitHub Enterprise (or the fake in tests) its own host.
 */
export function githubImageHosts(gitUrl: string): string[] {
  const host = new URL(gitUrl).host;
  if (host !== 'github.com') return [host];
  return [
    'github.com',
    'private-user-images.githubusercontent.com',
    'user-images.githubusercontent.com',
    'raw.githubusercontent.com',
  ];
}

/** What taking in a request's images needs: the intake, GitHub's image hosts, and a token for them. */
export type GitHubImageDeps = {
  intake: ImageIntake;
  hosts: readonly string[];
  /** The App's installation token for the request's repository (images of private repositories need it). */
  token: () => Promise<string>;
};

/**
 * Adds the images a request's body shows (only those on GitHub's own hosts; links elsewhere are
 * never fetched) to the command it became. Keyed by repository and URL, so a retried delivery
 * keeps each once. Returns what was refused, for the note the request's thread gets.
 */
export async function withGitHubImages(
  deps: GitHubImageDeps,
  repo: string,
  text: string,
  inbound: Inbound,
  signal: AbortSignal,
): Promise<{ inbound: Inbound; note: string }> {
  const links = imageLinksIn(text);
  if (links.length === 0 || (inbound.kind !== 'start' && inbound.kind !== 'answer')) return { inbound, note: '' };
  const refused: RefusedFile[] = [];
  const files = [];
  const token = links.some((l) => isAllowedHost(l.url, deps.hosts)) ? await deps.token() : undefined;
  for (const [index, link] of links.entries()) {
    if (index >= deps.intake.maxPerMessage) {
      refused.push({ name: link.name, reason: `a message may carry at most ${deps.intake.maxPerMessage} images` });
      continue;
    }
    const sourceKey = `github:${repo}:${createHash('sha256').update(link.url).digest('hex').slice(0, 32)}`;
    const got = await downloadFile(
      { sourceKey, name: link.name, url: link.url },
      { allowedHosts: deps.hosts, authorization: token && `token ${token}`, maxBytes: deps.intake.maxBytes, signal },
    );
    if (got.kind === 'file') files.push(got.file);
    else refused.push(got);
  }
  const attachments: AttachmentRef[] = [];
  for (const result of await deps.intake.take(files)) {
    if (result.kind === 'kept') attachments.push(result.attachment);
    else refused.push(result);
  }
  return {
    inbound: attachments.length > 0 ? { ...inbound, attachments } : inbound,
    note: refusalNote(refused),
  };
}

function nameOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() || 'image');
  } catch {
    return 'image';
  }
}
