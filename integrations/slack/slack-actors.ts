import type { Logger } from 'pino';
import { Actor } from '../../src/core/actor.ts';

/** The part of WebClient the directory uses. */
export type UsersInfoClient = {
  users: {
    info(args: { user: string }): Promise<{
      user?: {
        name?: string;
        real_name?: string;
        profile?: { real_name?: string; display_name?: string; email?: string };
      };
    }>;
  };
};

export type ActorDirectory = { get(userId: string): Promise<Actor> };

/**
 * Slack users as Actors: name and email from users.info (needs users:read and users:read.email),
 * so the requester becomes the commit author. Cached for a while, since every reply needs one and
 * users.info is rate limited; a failed lookup yields the bare user id rather than no reply.
 */
export function createActorDirectory(deps: {
  web: UsersInfoClient;
  log: Logger;
  ttlMs?: number;
  now?: () => number;
}): ActorDirectory {
  const ttlMs = deps.ttlMs ?? 10 * 60_000;
  const now = deps.now ?? Date.now;
  const cache = new Map<string, { actor: Actor; until: number }>();
  return {
    async get(userId) {
      const hit = cache.get(userId);
      if (hit && hit.until > now()) return hit.actor;
      try {
        const { user } = await deps.web.users.info({ user: userId });
        const profile = user?.profile ?? {};
        const name = profile.real_name || user?.real_name || profile.display_name || user?.name || userId;
        const email = Actor.shape.email.safeParse(profile.email).success ? profile.email : undefined;
        const actor: Actor = { source: 'slack', id: userId, name, ...(email && { email }) };
        cache.set(userId, { actor, until: now() + ttlMs });
        return actor;
      } catch (error) {
        deps.log.warn({ err: error, userId }, 'users.info failed; using the bare user id');
        return { source: 'slack', id: userId, name: userId };
      }
    },
  };
}
