import { z } from 'zod';
import { imageMediaTypes } from './transcript.ts';

/**
 * A picture a person attached to a message, as the message carries it: a reference to the session
 * artifact that holds the bytes (never the bytes, which would bloat the event log and the inbound
 * queue). The runner loads the bytes when it hands the message to the model.
 */
export const AttachmentRef = z.object({
  artifactId: z.string().min(1),
  mediaType: z.enum(imageMediaTypes),
  name: z.string(),
  byteSize: z.number().int().nonnegative(),
  /**
   * Set when someone other than the person who asked posted the picture (a picture in an issue
   * another person wrote): who, and where. The model is told, as it is told whose words it reads.
   */
  from: z.object({ author: z.string(), where: z.string() }).optional(),
});
export type AttachmentRef = z.infer<typeof AttachmentRef>;

/** A text someone other than the requester wrote, whose pictures are theirs: who, where, and the text. */
export type QuotedSource = { author: string; where: string; text: string };

/** A file a surface found on a message, already downloaded from its service's own host. */
export type IncomingFile = {
  /** Where it came from, unique across surfaces (`slack:T1:F123`): the same file is kept once. */
  sourceKey: string;
  name: string;
  bytes: Uint8Array;
};

/** What became of one incoming file: kept as an attachment, or refused with a reason the thread is told. */
export type IntakeResult =
  | { kind: 'kept'; attachment: AttachmentRef }
  | { kind: 'refused'; name: string; reason: string };

/**
 * Takes pictures in from the conversation: checks the format from the bytes, caps size and count,
 * scales large ones down and keeps them as attachment artifacts. Must not throw for a bad file
 * (that is a refusal); throws only when the store fails, so the delivery is retried.
 */
export interface ImageIntake {
  /** The most pictures one message may carry; the rest are refused. */
  readonly maxPerMessage: number;
  /** The largest file accepted before scaling, in bytes: downloads stop there. */
  readonly maxBytes: number;
  take(files: IncomingFile[]): Promise<IntakeResult[]>;
}

/** A file that was not taken in, for the note the thread gets. */
export type RefusedFile = { name: string; reason: string };

/** What the intake kept, in order, and what it refused. */
export function splitIntake(results: IntakeResult[]): { attachments: AttachmentRef[]; refused: RefusedFile[] } {
  const attachments: AttachmentRef[] = [];
  const refused: RefusedFile[] = [];
  for (const result of results) {
    if (result.kind === 'kept') attachments.push(result.attachment);
    else refused.push({ name: result.name, reason: result.reason });
  }
  return { attachments, refused };
}

/** The note a thread gets about the files that were refused; empty when none were. */
export function refusalNote(refused: RefusedFile[]): string {
  if (refused.length === 0) return '';
  const lines = refused.map((r) => `• ${r.name}: ${r.reason}`);
  return `I could not take in ${refused.length === 1 ? 'this file' : 'these files'}:\n${lines.join('\n')}`;
}

/** A byte count as a person reads it in a refusal: "10 MB", "20 KB". */
export function sizeText(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}
