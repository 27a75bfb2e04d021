import type { Logger } from 'pino';
import {
  defaultBranch,
  mirrorPath,
  normalizeRepo,
  resolveBranch,
  resolveRepo,
  withMirrorLock,
} from '../../git/mirror.ts';
import { runHostGit as runGit } from '../../git/host-git.ts';
import { extractKnowledge, wantsFile } from './extract-knowledge.ts';
import type { KnowledgeDocument, Lesson } from './knowledge-document.ts';
import { effectiveKnowledge, type KnowledgeStore } from './knowledge-store.ts';

export type LoadedKnowledge = {
  repo: string;
  document: KnowledgeDocument;
  lessons: Lesson[];
  builtFrom: string;
  source: 'extracted' | 'edited';
  rebuilt: boolean;
};

const maxFileBytes = 256 * 1024;

/** The key knowledge is stored under: the repository as its mirror names it. */
export function knowledgeKey(repo: string): string {
  return normalizeRepo(resolveRepo(repo));
}

/**
 * The repository's knowledge document: the stored one while the default branch is still at the
 * commit it was built from, else rebuilt from the files at the default branch's tip (read from the
 * host's mirror, which prepareWorkspace has just refreshed; the workspace the model touches is never
 * read by host git).
 */
export async function loadKnowledge(input: {
  repo: string;
  dataDir: string;
  store: KnowledgeStore;
  log: Logger;
  signal: AbortSignal;
}): Promise<LoadedKnowledge | undefined> {
  const { signal } = input;
  const repo = knowledgeKey(input.repo);
  const source = resolveRepo(input.repo);
  const mirror = { source, gitDir: mirrorPath(input.dataDir, source) };
  const tip = await withMirrorLock(mirror.gitDir, async () => {
    const branch = await defaultBranch(mirror, signal);
    return branch ? resolveBranch(mirror, branch, signal) : undefined;
  });
  if (!tip) return undefined;
  const stored = await input.store.get(repo);
  if (stored && stored.builtFrom === tip) {
    return {
      repo,
      document: effectiveKnowledge(stored),
      lessons: stored.lessons,
      builtFrom: tip,
      source: stored.edited ? 'edited' : 'extracted',
      rebuilt: false,
    };
  }
  const files = await readKnowledgeFiles(mirror.gitDir, tip, signal);
  const extracted = extractKnowledge(files);
  await input.store.saveExtracted(repo, tip, extracted);
  const saved = (await input.store.get(repo))!;
  input.log.info(
    { repo, commit: tip, setup: extracted.setup.length, checks: extracted.checks.length },
    'repository knowledge built',
  );
  return {
    repo,
    document: effectiveKnowledge(saved),
    lessons: saved.lessons,
    builtFrom: tip,
    source: saved.edited ? 'edited' : 'extracted',
    rebuilt: true,
  };
}

async function readKnowledgeFiles(gitDir: string, commit: string, signal: AbortSignal): Promise<Map<string, string>> {
  const listing = await runGit(['ls-tree', '-r', '-z', '--long', commit], { gitDir, signal });
  const files = new Map<string, string>();
  for (const entry of listing.split('\0')) {
    const m = /^(\d+) blob ([0-9a-f]+)\s+(\d+|-)\t(.+)$/s.exec(entry);
    if (!m || m[1] === '120000' || !wantsFile(m[4]!) || Number(m[3]) > maxFileBytes) continue;
    files.set(m[4]!, await runGit(['cat-file', 'blob', m[2]!], { gitDir, signal }));
  }
  return files;
}
