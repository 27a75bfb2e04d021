import type { ArtifactStore } from '../core/artifact-store.ts';
import type { ModelImage } from '../core/transcript.ts';
import type { UserMessageEvent } from './run-state.ts';

/**
 * The pictures a person attached to a message, read from the session's artifacts for the model.
 * The event carries only references; an attachment that is gone (or a run without an artifact
 * store) is left out. Undefined when there are none, so messages without pictures stay as they were.
 */
export async function attachedImages(
  artifacts: Pick<ArtifactStore, 'get'> | undefined,
  messages: UserMessageEvent[],
): Promise<ModelImage[] | undefined> {
  const refs = messages.flatMap((m) => m.event.attachments ?? []);
  if (!artifacts || refs.length === 0) return undefined;
  const images: ModelImage[] = [];
  for (const ref of refs) {
    const artifact = await artifacts.get(ref.artifactId);
    if (!artifact) continue;
    images.push({
      mediaType: artifact.mediaType,
      data: Buffer.from(artifact.bytes).toString('base64'),
      name: ref.name,
      ...(artifact.width !== undefined && { width: artifact.width }),
      ...(artifact.height !== undefined && { height: artifact.height }),
    });
  }
  return images.length > 0 ? images : undefined;
}
