import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { SessionArtifactsTable } from '../../../db/schema-artifacts.ts';
import type { Artifact, ArtifactInfo, ArtifactStore } from '../../core/artifact-store.ts';
import { imageMediaTypes, type ImageMediaType } from '../../core/transcript.ts';

const infoColumns = [
  'id',
  'session_id',
  'kind',
  'name',
  'media_type',
  'byte_size',
  'width',
  'height',
  'created_at',
] as const;

/** The columns of a picture itself, the same for a screenshot and an attachment. */
function pictureColumns(picture: Pick<Artifact, 'name' | 'mediaType' | 'bytes' | 'width' | 'height'>) {
  return {
    name: picture.name,
    media_type: picture.mediaType,
    bytes: Buffer.from(picture.bytes),
    byte_size: picture.bytes.byteLength,
    width: picture.width ?? null,
    height: picture.height ?? null,
  };
}

/** The ArtifactStore on PostgreSQL: one row per picture in `session_artifacts`, its bytes in a bytea. */
export function createPgArtifactStore(db: Kysely<Database>): ArtifactStore {
  return {
    async save(artifact) {
      const row = await db
        .insertInto('session_artifacts')
        .values({
          id: newArtifactId(),
          session_id: artifact.sessionId,
          kind: artifact.kind,
          ...pictureColumns(artifact),
        })
        .returning(infoColumns)
        .executeTakeFirstOrThrow();
      return toInfo(row);
    },

    async keepAttachment(attachment) {
      const values = {
        id: newArtifactId(),
        kind: 'attachment' as const,
        ...pictureColumns(attachment),
        source_key: attachment.sourceKey,
      };
      await db
        .insertInto('session_artifacts')
        .values(values)
        .onConflict((oc) => oc.column('source_key').doNothing())
        .execute();
      const row = await db
        .selectFrom('session_artifacts')
        .select(['id', 'byte_size'])
        .where('source_key', '=', attachment.sourceKey)
        .executeTakeFirstOrThrow();
      return { id: row.id, byteSize: row.byte_size };
    },

    async attach(sessionId, ids) {
      if (ids.length === 0) return;
      await db
        .updateTable('session_artifacts')
        .set({ session_id: sessionId })
        .where('id', 'in', ids)
        .where('session_id', 'is', null)
        .execute();
    },

    async get(id) {
      const row = await db
        .selectFrom('session_artifacts')
        .selectAll()
        .where('id', '=', id)
        .where('session_id', 'is not', null)
        .executeTakeFirst();
      return row && toArtifact(row);
    },

    async list(sessionId) {
      const rows = await db
        .selectFrom('session_artifacts')
        .select(infoColumns)
        .where('session_id', '=', sessionId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map(toInfo);
    },
  };
}

/** 128 random bits in base64url: an id nobody can guess or count through. */
function newArtifactId(): string {
  return randomBytes(16).toString('base64url');
}

type InfoRow = Pick<Selectable<SessionArtifactsTable>, (typeof infoColumns)[number]>;

/** Rows read with their session (`get` and `list` never read a waiting attachment). */
function toInfo(row: InfoRow): ArtifactInfo {
  return {
    id: row.id,
    sessionId: row.session_id ?? '',
    kind: row.kind,
    name: row.name,
    mediaType: mediaType(row.media_type),
    byteSize: row.byte_size,
    width: row.width ?? undefined,
    height: row.height ?? undefined,
    createdAt: row.created_at,
  };
}

function toArtifact(row: Selectable<SessionArtifactsTable>): Artifact {
  return { ...toInfo(row), bytes: new Uint8Array(row.bytes) };
}

/** The stored media type, checked: only the picture formats models read are ever written. */
function mediaType(stored: string): ImageMediaType {
  const known = imageMediaTypes.find((type) => type === stored);
  if (!known) throw new Error(`session artifact with an unknown media type ${JSON.stringify(stored)}`);
  return known;
}
