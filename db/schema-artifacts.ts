import type { ColumnType } from 'kysely';

/** A picture kept with a session: an attachment someone gave it, or a screenshot a tool took (migration 018). */
export interface SessionArtifactsTable {
  /** Random and unguessable (128 bits, base64url): links to the artifact carry it. */
  id: string;
  session_id: string;
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
