import { z } from 'zod';

/** Who spoke. Every message keeps its actor and time. */
export const Actor = z.object({
  source: z.enum(['slack', 'github', 'linear', 'web', 'cli', 'system']),
  id: z.string().min(1),
  name: z.string().min(1),
  email: z.string().email().optional(),
  githubLogin: z.string().min(1).optional(),
  /**
   * The GitHub account (its numeric id) another service says is this person's: Linear's linked
   * account. Their access to a repository is checked as that account's.
   */
  githubId: z.string().regex(/^\d+$/).optional(),
});
export type Actor = z.infer<typeof Actor>;

/** A CI failure handed to the agent speaks as this actor: not a person, but a new request to the gates. */
export const ciActor: Actor = { source: 'system', id: 'patchbay-ci', name: 'CI (GitHub)' };

/** The name and email a commit is authored with. Falls back to a noreply address. */
export function commitIdentity(actor: Actor): { name: string; email: string } {
  const email =
    actor.email ??
    (actor.githubLogin ? `${actor.githubLogin}@users.noreply.github.com` : `${slugify(actor.id)}@patchbay.invalid`);
  return { name: actor.name, email };
}

function slugify(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'user'
  );
}
