import { z } from 'zod';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { KnowledgeDocument } from '../harness/knowledge/knowledge-document.ts';
import { effectiveKnowledge } from '../harness/knowledge/knowledge-store.ts';
import { createKnowledgeStore } from '../sessions/harness-stores/pg-knowledge-store.ts';
import { knowledgeKey } from '../harness/knowledge/load-knowledge.ts';
import type { RepoKnowledge } from './api-types.ts';
import type { ApiServer } from './server.ts';

const PutKnowledgeBody = z.object({
  document: KnowledgeDocument,
  author: z.object({ name: z.string().min(1).max(200) }).optional(),
});

type RepoParams = { Params: { repo: string } };

/**
 * The repository knowledge document, readable and editable by people: `GET/PUT
 * /api/repos/:repo/knowledge` (`:repo` URL-encoded, as sessions name it). An edit wins over the
 * extraction until the next edit.
 */
export function registerKnowledgeRoutes(app: ApiServer, deps: { db: Kysely<Database> }): void {
  const store = createKnowledgeStore(deps.db);
  const view = (k: NonNullable<Awaited<ReturnType<typeof store.get>>>): RepoKnowledge => ({
    repo: k.repo,
    builtFrom: k.builtFrom,
    builtAt: k.builtAt,
    source: k.edited ? 'edited' : 'extracted',
    document: effectiveKnowledge(k),
    extracted: k.extracted,
    edited: k.edited,
    lessons: k.lessons,
  });
  const keyOf = (repo: string) => {
    try {
      return knowledgeKey(repo);
    } catch {
      return undefined;
    }
  };

  app.get<RepoParams>('/api/repos/:repo/knowledge', async (request, reply) => {
    const key = keyOf(request.params.repo);
    const stored = key ? await store.get(key) : undefined;
    if (!stored)
      return reply.code(404).send({
        error: 'not_found',
        message: `no knowledge document for ${request.params.repo} yet: it is built on the repository's first session`,
      });
    return view(stored);
  });

  app.put<RepoParams>('/api/repos/:repo/knowledge', async (request, reply) => {
    const parsed = PutKnowledgeBody.safeParse(request.body);
    if (!parsed.success)
      return reply
        .code(400)
        .send({ error: 'invalid_input', message: 'invalid knowledge document', issues: parsed.error.issues });
    const key = keyOf(request.params.repo);
    const saved = key ? await store.saveEdit(key, parsed.data.document, parsed.data.author?.name ?? 'API') : undefined;
    if (!saved)
      return reply.code(404).send({
        error: 'not_found',
        message: `no knowledge document for ${request.params.repo} yet: it is built on the repository's first session`,
      });
    return view(saved);
  });
}
