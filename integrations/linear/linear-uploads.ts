import { refusalNote, type ImageIntake } from '../../src/core/attachment.ts';
import { takeLinkedImages } from '../image-links.ts';
import { quotedSources } from './linear-task.ts';
import { post, type EventScope, type Interpreted } from './linear-steps.ts';

/**
 * Where Linear serves a workspace's uploads for this API URL: uploads.linear.app for Linear itself,
 * the API's own host for anything else (the loopback fake in tests).
 */
export function linearUploadHosts(apiUrl: string): string[] {
  const host = new URL(apiUrl).host;
  return host === 'api.linear.app' ? ['uploads.linear.app'] : [host];
}

/** What taking in an issue's uploads needs: the intake, Linear's upload hosts, the workspace's token. */
export type LinearUploadDeps = {
  intake: ImageIntake;
  hosts: readonly string[];
  /** The Authorization header for the workspace's uploads (its OAuth token, or the API key). */
  authorization: (organizationId: string) => Promise<string | undefined>;
};

/**
 * Adds the pictures the task or prompt links to (uploads in the issue description or a comment)
 * to the command it became; links to other hosts are never fetched. The refused ones are named in
 * a thought whose id comes from the delivery, so a retry posts it once.
 */
export async function withLinearUploads(
  deps: LinearUploadDeps | undefined,
  scope: EventScope,
  interpreted: Interpreted,
  signal: AbortSignal,
): Promise<Interpreted> {
  if (!deps || interpreted.kind !== 'inbound') return interpreted;
  const { inbound } = interpreted;
  if (inbound.kind !== 'start' && inbound.kind !== 'message' && inbound.kind !== 'answer') return interpreted;
  const { organizationId, agentSession } = scope.event;
  const { attachments, refused } = await takeLinkedImages(
    {
      intake: deps.intake,
      hosts: deps.hosts,
      authorization: () => deps.authorization(organizationId),
      source: `linear:${organizationId}`,
      // A new session's task quotes others' words (the issue, the thread): their pictures are theirs.
      ...(inbound.kind === 'start' && { quoted: quotedSources(scope.event) }),
    },
    inbound.text,
    signal,
  );
  if (refused.length > 0)
    await post(scope.api, agentSession.id, `${scope.key}:images`, {
      content: { type: 'thought', body: refusalNote(refused) },
    });
  return attachments.length > 0 ? { ...interpreted, inbound: { ...inbound, attachments } } : interpreted;
}
