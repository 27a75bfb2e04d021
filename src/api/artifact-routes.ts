import type { FastifyReply } from 'fastify';
import type { Artifact, ArtifactStore } from '../core/artifact-store.ts';
import { PatchbayError } from '../core/errors.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import type { ArtifactLinks } from './artifact-links.ts';
import type { ApiServer } from './server.ts';

/** One kept picture of a session, as GET /api/sessions/:id/artifacts lists it. */
export type ArtifactListing = {
  id: string;
  kind: string;
  name: string;
  mediaType: string;
  byteSize: number;
  width?: number | undefined;
  height?: number | undefined;
  createdAt: string;
  /** The signed link, which works without the API token. */
  url: string;
};

/** A picture is shown, never run: no scripts, no plugins, no framing by other sites, no sniffing. */
const ARTIFACT_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'self'";

/**
 * GET /artifacts/:id?sig=…&exp=… serves a session artifact to anyone holding a signed link (pull
 * request bodies, Slack threads); a missing, wrong or expired signature is a plain 404, the same
 * as an unknown id, so a link without its signature says nothing about what exists.
 * GET /api/sessions/:id/artifacts (behind the token) lists a session's artifacts with their links.
 */
export function registerArtifactRoutes(
  app: ApiServer,
  deps: { artifacts: ArtifactStore; links: ArtifactLinks; store: Pick<SessionStore, 'get'> },
): void {
  app.get<{ Params: { id: string }; Querystring: { sig?: string; exp?: string } }>(
    '/artifacts/:id',
    async (request, reply) => {
      const { sig, exp } = request.query;
      const { id } = request.params;
      const artifact =
        typeof sig === 'string' && typeof exp === 'string' && deps.links.verify(id, sig, exp)
          ? await deps.artifacts.get(id)
          : undefined;
      if (!artifact) return reply.code(404).send({ error: 'not_found', message: 'no such artifact' });
      return sendPicture(reply, artifact);
    },
  );

  // The page shows pictures with its own sign-in (the cookie), so it needs no signed links.
  app.get<{ Params: { id: string; artifactId: string } }>(
    '/api/sessions/:id/artifacts/:artifactId',
    async (request, reply) => {
      const artifact = await deps.artifacts.get(request.params.artifactId);
      if (!artifact || artifact.sessionId !== request.params.id)
        throw new PatchbayError(
          'not_found',
          `no artifact ${request.params.artifactId} in session ${request.params.id}`,
        );
      return sendPicture(reply, artifact);
    },
  );

  app.get<{ Params: { id: string } }>('/api/sessions/:id/artifacts', async (request): Promise<ArtifactListing[]> => {
    const session = await deps.store.get(request.params.id);
    if (!session) throw new PatchbayError('not_found', `no session ${request.params.id}`);
    const kept = await deps.artifacts.list(session.id);
    return kept.map((a) => ({
      id: a.id,
      kind: a.kind,
      name: a.name,
      mediaType: a.mediaType,
      byteSize: a.byteSize,
      width: a.width,
      height: a.height,
      createdAt: a.createdAt.toISOString(),
      url: deps.links.url(a.id),
    }));
  });
}

/** The picture's bytes under its stored media type, never sniffed into anything that runs. */
function sendPicture(reply: FastifyReply, artifact: Artifact): FastifyReply {
  return reply
    .header('content-type', artifact.mediaType)
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', ARTIFACT_CSP)
    .header('cache-control', 'private, max-age=86400')
    .header('content-disposition', 'inline')
    .send(Buffer.from(artifact.bytes));
}
