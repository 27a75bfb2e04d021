import { createHash } from 'node:crypto';
import { type AttachmentRef, type ImageIntake, refusalNote, splitIntake } from '../core/attachment.ts';
import { PatchbayError } from '../core/errors.ts';

/** A picture dropped on the page's message box, as the page sends it: its file name and bytes in base64. */
export type PostedImage = { name: string; data: string };

/**
 * The pictures of a message sent from the page, taken in like any surface's: the format from the
 * bytes, the caps, scaled down, kept waiting for the session. A refused file refuses the message
 * (400, with the reason for each file), so nothing is sent without the picture the person meant.
 */
export async function takePostedImages(
  intake: ImageIntake | undefined,
  sessionId: string,
  images: PostedImage[] | undefined,
): Promise<AttachmentRef[] | undefined> {
  if (!images?.length) return undefined;
  if (!intake) throw new PatchbayError('invalid_input', 'this server takes no pictures with messages');
  if (images.length > intake.maxPerMessage)
    throw new PatchbayError('invalid_input', `a message may carry at most ${intake.maxPerMessage} pictures`);
  const files = images.map((image) => {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(image.data))
      throw new PatchbayError('invalid_input', `${image.name}: the picture is not base64`);
    const bytes = Buffer.from(image.data, 'base64');
    const digest = createHash('sha256').update(bytes).digest('hex');
    return { sourceKey: `web:${sessionId}:${digest}`, name: image.name, bytes };
  });
  const { attachments, refused } = splitIntake(await intake.take(files));
  if (refused.length > 0) throw new PatchbayError('invalid_input', refusalNote(refused));
  return attachments;
}

/** The largest message body the route accepts: every picture at its cap, in base64, and the text. */
export function messageBodyLimit(intake: ImageIntake | undefined): number {
  const text = 1024 * 1024;
  return intake ? text + Math.ceil((intake.maxBytes * intake.maxPerMessage * 4) / 3) : text;
}
