import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * How long a signed artifact link works: 90 days. Links go into pull request bodies and Slack
 * threads, which people read long after the session, and the artifact id in them is unguessable.
 */
export const ARTIFACT_LINK_TTL_MS = 90 * 24 * 60 * 60 * 1000;

/** Signs and checks links to session artifacts, so they work without the API token. */
export type ArtifactLinks = {
  /** An absolute link to the artifact (on PUBLIC_URL), valid for ARTIFACT_LINK_TTL_MS from now. */
  url(id: string): string;
  /** Whether `sig` signs this id with this expiry (unix seconds), and the expiry has not passed. */
  verify(id: string, sig: string, exp: string): boolean;
};

/**
 * Artifact links signed with an HMAC-SHA256 of the server's artifact secret over the id and the
 * expiry. Every process that makes or serves links must hold the same secret.
 */
export function createArtifactLinks(options: {
  secret: string;
  publicUrl: string;
  ttlMs?: number;
  now?: () => number;
}): ArtifactLinks {
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlMs ?? ARTIFACT_LINK_TTL_MS;
  const base = options.publicUrl.replace(/\/+$/, '');
  const sign = (id: string, exp: string) =>
    createHmac('sha256', options.secret).update(`artifact:${id}:${exp}`).digest('base64url');
  return {
    url(id) {
      const exp = String(Math.floor((now() + ttlMs) / 1000));
      return `${base}/artifacts/${encodeURIComponent(id)}?sig=${sign(id, exp)}&exp=${exp}`;
    },
    verify(id, sig, exp) {
      if (!/^\d{1,12}$/.test(exp) || Number(exp) * 1000 < now()) return false;
      const expected = Buffer.from(sign(id, exp));
      const given = Buffer.from(sig);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}
