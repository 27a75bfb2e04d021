import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../../db/schema.ts';
import { KnowledgeDocument, Lesson } from '../../harness/knowledge/knowledge-document.ts';
import {
  effectiveKnowledge,
  type KnowledgeStore,
  type StoredKnowledge,
} from '../../harness/knowledge/knowledge-store.ts';
import type { EgressAllowEntry } from '../../core/egress-allow.ts';

/** Repository knowledge rows (`repo_knowledge`). JSON columns are validated on the way out. */
export function createKnowledgeStore(db: Kysely<Database>): KnowledgeStore {
  const read = async (repo: string): Promise<StoredKnowledge | undefined> => {
    const row = await db.selectFrom('repo_knowledge').selectAll().where('repo', '=', repo).executeTakeFirst();
    if (!row) return undefined;
    return {
      repo: row.repo,
      builtFrom: row.built_from,
      builtAt: new Date(row.built_at).toISOString(),
      extracted: KnowledgeDocument.parse(row.extracted),
      edited: row.edited
        ? {
            document: KnowledgeDocument.parse(row.edited),
            by: row.edited_by ?? '',
            at: new Date(row.edited_at ?? 0).toISOString(),
          }
        : null,
      lessons: z.array(Lesson).parse(row.lessons),
    };
  };
  return {
    get: read,
    async list(): Promise<{ repo: string; builtFrom: string; edited: boolean }[]> {
      const rows = await db
        .selectFrom('repo_knowledge')
        .select(['repo', 'built_from', 'edited'])
        .orderBy('repo')
        .execute();
      return rows.map((r) => ({ repo: r.repo, builtFrom: r.built_from, edited: r.edited !== null }));
    },
    /** Stores a fresh extraction; a person's edit, the lessons and the allowed hosts stay. */
    async saveExtracted(repo: string, builtFrom: string, extraction: KnowledgeDocument): Promise<void> {
      const kept = (await read(repo))?.extracted.egressAllow;
      const document = kept ? { ...extraction, egressAllow: kept } : extraction;
      await db
        .insertInto('repo_knowledge')
        .values({ repo, built_from: builtFrom, extracted: JSON.stringify(document) })
        .onConflict((oc) =>
          oc
            .column('repo')
            .doUpdateSet({ built_from: builtFrom, extracted: JSON.stringify(document), built_at: new Date() }),
        )
        .execute();
    },
    /**
     * A person's edit. Undefined when the repo has no document yet (nothing to edit). The allowed
     * hosts stay as they are: only allowing and revoking change them, so a stale edit brings back
     * no revoked host.
     */
    async saveEdit(repo: string, edit: KnowledgeDocument, by: string): Promise<StoredKnowledge | undefined> {
      const current = await read(repo);
      const { egressAllow: _asEdited, ...rest } = edit;
      const kept = current && effectiveKnowledge(current).egressAllow;
      const document: KnowledgeDocument = kept ? { ...rest, egressAllow: kept } : rest;
      const updated = await db
        .updateTable('repo_knowledge')
        .set({ edited: JSON.stringify(document), edited_by: by, edited_at: new Date() })
        .where('repo', '=', repo)
        .executeTakeFirst();
      return updated.numUpdatedRows > 0n ? read(repo) : undefined;
    },
    changeEgressAllow: (repo, change) => changeEgressAllow(db, repo, change),
    /** Remembers something an earlier session learned (newest 20 kept). */
    async addLesson(repo: string, text: string): Promise<void> {
      const current = await read(repo);
      if (!current) return;
      if (current.lessons.some((l) => l.text === text)) return;
      const lessons = [...current.lessons, { at: new Date().toISOString(), text: text.slice(0, 1000) }].slice(-20);
      await db
        .updateTable('repo_knowledge')
        .set({ lessons: JSON.stringify(lessons) })
        .where('repo', '=', repo)
        .execute();
    },
  };
}

/** KnowledgeStore.changeEgressAllow: one transaction holding the row, both documents changed alike. */
async function changeEgressAllow(
  db: Kysely<Database>,
  repo: string,
  change: (entries: readonly EgressAllowEntry[]) => EgressAllowEntry[],
): Promise<EgressAllowEntry[] | undefined> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('repo_knowledge')
      .select(['extracted', 'edited'])
      .where('repo', '=', repo)
      .forUpdate()
      .executeTakeFirst();
    if (!row) return undefined;
    const extracted = KnowledgeDocument.parse(row.extracted);
    const edited = row.edited ? KnowledgeDocument.parse(row.edited) : undefined;
    const entries = change((edited ?? extracted).egressAllow ?? []);
    const withEntries = (doc: KnowledgeDocument) => JSON.stringify({ ...doc, egressAllow: entries });
    await trx
      .updateTable('repo_knowledge')
      .set({ extracted: withEntries(extracted), ...(edited && { edited: withEntries(edited) }) })
      .where('repo', '=', repo)
      .execute();
    return entries;
  });
}
