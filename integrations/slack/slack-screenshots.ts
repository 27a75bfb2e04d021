import type { WebClient } from '@slack/web-api';
import type { ArtifactStore } from '../../src/core/artifact-store.ts';
import type { EventOf } from '../../src/core/events.ts';
import type { Logger } from 'pino';
import type { SlackStore, SlackThread } from './slack-store.ts';

/** The part of Slack's Web API client that uploads files (files.uploadV2, which needs `files:write`). */
export type SlackFiles = Pick<WebClient, 'filesUploadV2'>;

/**
 * Uploads a UI change's before/after screenshots into the thread with files.uploadV2 (Slack's
 * getUploadURLExternal, the upload, completeUploadExternal), one message per page with both
 * pictures. Returns how many files went up; a side that was not taken is left out.
 */
async function uploadScreenshots(
  deps: { web: SlackFiles; artifacts: Pick<ArtifactStore, 'get'> },
  thread: SlackThread,
  event: EventOf<'ui-screenshots'>,
): Promise<number> {
  let uploaded = 0;
  for (const page of event.pages) {
    const sides = [
      { side: 'before', id: page.before },
      { side: 'after', id: page.after },
    ];
    const files = [];
    for (const { side, id } of sides) {
      const artifact = id ? await deps.artifacts.get(id) : undefined;
      if (!artifact) continue;
      files.push({ file: Buffer.from(artifact.bytes), filename: `${side}.png`, title: `${side}: ${page.url}` });
    }
    if (files.length === 0) continue;
    await deps.web.filesUploadV2({
      channel_id: thread.channel,
      thread_ts: thread.threadTs,
      initial_comment: `Before and after the change: ${page.url}`,
      file_uploads: files,
    });
    uploaded += files.length;
  }
  return uploaded;
}

/**
 * Uploads the screenshots of one `ui-screenshots` event to the thread once: the post is recorded
 * before the upload, so a repeated batch never uploads a second copy, and a failed upload is
 * logged, not retried (the pull request still links the pictures).
 */
export async function uploadScreenshotsOnce(
  deps: { web: SlackFiles; artifacts: Pick<ArtifactStore, 'get'>; store: Pick<SlackStore, 'recordPost'>; log: Logger },
  thread: SlackThread,
  posts: Map<string, string>,
  event: EventOf<'ui-screenshots'>,
): Promise<void> {
  const key = `shots:${event.commit}`;
  if (posts.has(key)) return;
  await deps.store.recordPost(thread, key, event.commit);
  posts.set(key, event.commit);
  await uploadScreenshots(deps, thread, event).catch((error: unknown) =>
    deps.log.warn({ err: error }, 'the before/after screenshots could not be uploaded to the Slack thread'),
  );
}
