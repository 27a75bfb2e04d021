import type { ImageIntake } from '../../src/core/attachment.ts';
import { refusalNote } from '../../src/core/attachment.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { takeLinkedImages } from '../image-links.ts';
import type { WorkRequest } from './webhook-payloads.ts';

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
 * never fetched) to the command it became. Returns the note about refused ones for the thread.
 */
export async function withGitHubImages(
  deps: GitHubImageDeps,
  repo: string,
  request: Pick<WorkRequest, 'text' | 'quoted'>,
  inbound: Inbound,
  signal: AbortSignal,
): Promise<{ inbound: Inbound; note: string }> {
  if (inbound.kind !== 'start' && inbound.kind !== 'answer') return { inbound, note: '' };
  const { attachments, refused } = await takeLinkedImages(
    {
      intake: deps.intake,
      hosts: deps.hosts,
      authorization: async () => `token ${await deps.token()}`,
      source: `github:${repo}`,
      ...(request.quoted && { quoted: request.quoted }),
    },
    request.text,
    signal,
  );
  return {
    inbound: attachments.length > 0 ? { ...inbound, attachments } : inbound,
    note: refusalNote(refused),
  };
}
