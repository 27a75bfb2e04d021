import type { EgressAllowEntry } from '../../core/egress-allow.ts';
import type { ScoutReport } from '../../core/repository-scout.ts';
import type { KnowledgeDocument, Lesson } from './knowledge-document.ts';

export type StoredKnowledge = {
  repo: string;
  builtFrom: string;
  builtAt: string;
  extracted: KnowledgeDocument;
  edited: { document: KnowledgeDocument; by: string; at: string } | null;
  lessons: Lesson[];
};

/** The document in use: a person's edit wins over the extraction until the next edit. */
export function effectiveKnowledge(stored: StoredKnowledge): KnowledgeDocument {
  return stored.edited?.document ?? stored.extracted;
}

/** Where repository knowledge is kept (`repo_knowledge`); the sessions layer implements it. */
export interface KnowledgeStore {
  get(repo: string): Promise<StoredKnowledge | undefined>;
  list(): Promise<{ repo: string; builtFrom: string; edited: boolean }[]>;
  /** Stores a fresh extraction; a person's edit and the lessons stay. */
  saveExtracted(repo: string, builtFrom: string, document: KnowledgeDocument): Promise<void>;
  /** A person's edit. Undefined when the repo has no document yet (nothing to edit). */
  saveEdit(repo: string, document: KnowledgeDocument, by: string): Promise<StoredKnowledge | undefined>;
  /**
   * Keeps a scout pass's report in the extraction (making the row when the repo has none yet) and in
   * a person's edit that has no scouted rules of its own; an edit that has them keeps its own.
   */
  saveScouted(repo: string, report: ScoutReport): Promise<void>;
  /** Remembers something an earlier session learned (newest 20 kept). */
  addLesson(repo: string, text: string): Promise<void>;
  /**
   * Changes the repository's allowed hosts (`egressAllow`) in the extraction and in a person's edit
   * alike, under the row's lock, without making the document an edit. The list it ended with;
   * undefined when the repo has no document yet.
   */
  changeEgressAllow(
    repo: string,
    change: (entries: readonly EgressAllowEntry[]) => EgressAllowEntry[],
  ): Promise<EgressAllowEntry[] | undefined>;
}
