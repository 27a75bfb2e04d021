import type { Logger } from 'pino';
import { z } from 'zod';
import type { GitHubStore } from './github-store.ts';

const RepoList = z.array(z.object({ id: z.number(), full_name: z.string() }).passthrough()).optional();

const InstallationEvent = z.object({
  action: z.string(),
  installation: z
    .object({
      id: z.number(),
      account: z.object({ login: z.string(), type: z.string().optional() }).passthrough().nullable(),
      repository_selection: z.string(),
    })
    .passthrough(),
  repositories: RepoList,
  repositories_added: RepoList,
  repositories_removed: RepoList,
});

type InstallationEvent = z.infer<typeof InstallationEvent>;

function reposOf(list: { id: number; full_name: string }[] | undefined): { id: number; fullName: string }[] {
  return (list ?? []).map((r) => ({ id: r.id, fullName: r.full_name }));
}

/**
 * An `installation` or `installation_repositories` webhook: the App's installations and the
 * repositories each covers, as the store keeps them for git credentials and repository choices.
 * Every write is an upsert or a delete, so a retry repeats it harmlessly.
 */
export async function recordInstallation(
  store: GitHubStore,
  event: string,
  payload: unknown,
  log: Logger,
): Promise<void> {
  const parsed = InstallationEvent.safeParse(payload);
  if (!parsed.success) {
    // Retrying cannot fix the shape; one warning, and the delivery is done.
    log.warn({ issues: parsed.error.issues.slice(0, 5) }, 'installation payload not understood; dropped');
    return;
  }
  const p = parsed.data;
  const id = p.installation.id;
  if (event === 'installation') {
    if (p.action === 'deleted') return store.deleteInstallation(id);
    await upsertInstallation(store, p, p.action === 'suspend');
    await store.addRepos(id, reposOf(p.repositories));
    return;
  }
  await upsertInstallation(store, p, false);
  if (p.action === 'added') await store.addRepos(id, reposOf(p.repositories_added));
  if (p.action === 'removed')
    await store.removeRepos(
      id,
      reposOf(p.repositories_removed).map((r) => r.id),
    );
}

async function upsertInstallation(store: GitHubStore, p: InstallationEvent, suspended: boolean): Promise<void> {
  const inst = p.installation;
  await store.upsertInstallation({
    id: inst.id,
    accountLogin: inst.account?.login ?? 'unknown',
    accountType: inst.account?.type ?? 'User',
    repositorySelection: inst.repository_selection,
    suspended,
  });
}
