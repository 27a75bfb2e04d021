import type { ColumnType } from 'kysely';

/** A picture kept with a session: an attachment someone gave it, or a screenshot a tool took (migration 020). */
export interface SessionArtifactsTable {
  /** Random and unguessable (128 bits, base64url): links to the artifact carry it. */
  id: string;
  /** Null while an attachment waits for the message that carries it to land in a session (migration 021). */
  session_id: string | null;
  /** Where an attachment came from (`slack:T1:F123`): kept once per source. */
  source_key: ColumnType<string | null, string | null | undefined, never>;
  kind: 'attachment' | 'screenshot';
  /** What to call it ("screenshot of http://127.0.0.1:3000/", a file name). */
  name: string;
  media_type: string;
  bytes: Buffer;
  byte_size: number;
  width: number | null;
  height: number | null;
  created_at: ColumnType<Date, Date | undefined, never>;
}
