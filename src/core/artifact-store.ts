import type { ImageMediaType } from './transcript.ts';

/** Where a session's picture came from: a person attached it, or a tool took it. */
export type ArtifactKind = 'attachment' | 'screenshot';

/** A picture to keep with a session. */
export type NewArtifact = {
  sessionId: string;
  kind: ArtifactKind;
  /** What to call it ("screenshot of http://127.0.0.1:3000/", a file name). */
  name: string;
  mediaType: ImageMediaType;
  bytes: Uint8Array;
  width?: number | undefined;
  height?: number | undefined;
};

/** A kept picture without its bytes, as a listing shows it. */
export type ArtifactInfo = Omit<NewArtifact, 'bytes'> & {
  /** Random and unguessable: a link to the artifact carries it. */
  id: string;
  byteSize: number;
  createdAt: Date;
};

export type Artifact = ArtifactInfo & { bytes: Uint8Array };

/** A picture a person attached, kept before the session it belongs to is known. */
export type NewAttachment = Omit<NewArtifact, 'sessionId' | 'kind'> & {
  /** Where it came from (`slack:T1:F123`): keeping the same source again returns the stored one. */
  sourceKey: string;
};

/**
 * The session artifact port: pictures kept with the session, outside the sandbox, so they outlive
 * the workspace and can be shown on the page and attached to the thread.
 */
export interface ArtifactStore {
  /** Stores the picture under a new random id. */
  save(artifact: NewArtifact): Promise<ArtifactInfo>;
  /** Keeps an attachment without a session yet, once per source key: the stored one's id when it was kept before. */
  keepAttachment(attachment: NewAttachment): Promise<{ id: string; byteSize: number }>;
  /** Gives waiting attachments their session (the message carrying them landed there); others are left alone. */
  attach(sessionId: string, ids: string[]): Promise<void>;
  /** Undefined when no artifact of a session has that id. */
  get(id: string): Promise<Artifact | undefined>;
  /** The session's artifacts, oldest first. */
  list(sessionId: string): Promise<ArtifactInfo[]>;
}
