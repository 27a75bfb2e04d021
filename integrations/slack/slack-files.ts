import type { AttachmentRef, ImageIntake } from '../../src/core/attachment.ts';
import { refusalNote, type RefusedFile, splitIntake } from '../../src/core/attachment.ts';
import type { Interpretation } from '../../src/core/delivery-interpreter.ts';
import { downloadFile, type FileLink } from '../attachment-download.ts';
import { say, type SayDeps } from './slack-interpreter-posts.ts';
import type { SlackFile, SlackMessageEvent } from './slack-payloads.ts';
import { threadOf } from './slack-text.ts';

/** What taking in a message's files needs: the intake, the bot token, where Slack serves files, how to post. */
export type SlackFileDeps = {
  intake: ImageIntake;
  botToken: string;
  /** The hosts `url_private` may point to (files.slack.com; the fake's host in tests). */
  fileHosts: readonly string[];
  /** The interpreter's post-once path, for the note about refused files. */
  say: SayDeps;
};

/**
 * Where Slack serves a workspace's files for this Web API base URL: files.slack.com for Slack
 * itself, the API's own host for anything else (a proxy, or the loopback fake in tests).
 */
export function slackFileHosts(apiUrl: string): string[] {
  const host = new URL(apiUrl).host;
  return host === 'slack.com' ? ['files.slack.com'] : [host];
}

/**
 * Adds the pictures shared with a message to the command it became (a start, a message or an
 * answer): each is downloaded with the bot token from Slack's own file host and taken in. Files
 * that were refused get one note in the thread, posted once under the message's ts (a retried
 * delivery, or a post whose answer was lost, finds it in the thread instead of posting again); the
 * command goes on with the text. Safe to repeat: the intake keeps a file once per Slack file id.
 */
export async function withSlackFiles<Errand>(
  deps: SlackFileDeps | undefined,
  teamId: string,
  event: SlackMessageEvent,
  interpreted: Interpretation<Errand>,
  context: { signal: AbortSignal },
): Promise<Interpretation<Errand>> {
  const files = event.files ?? [];
  if (!deps || files.length === 0 || interpreted.kind !== 'inbound') return interpreted;
  const { inbound } = interpreted;
  if (inbound.kind !== 'start' && inbound.kind !== 'message' && inbound.kind !== 'answer') return interpreted;
  const { attachments, refused } = await takeFiles(deps, teamId, files, context.signal);
  if (refused.length > 0)
    await say(deps.say, threadOf(teamId, event), `files-refused:${event.ts}`, { text: refusalNote(refused) });
  if (attachments.length === 0) return interpreted;
  return { ...interpreted, inbound: { ...inbound, attachments } };
}

async function takeFiles(
  deps: SlackFileDeps,
  teamId: string,
  files: SlackFile[],
  signal: AbortSignal,
): Promise<{ attachments: AttachmentRef[]; refused: RefusedFile[] }> {
  const { intake } = deps;
  const refused: RefusedFile[] = files
    .slice(intake.maxPerMessage)
    .map((f) => ({ name: nameOf(f), reason: `a message may carry at most ${intake.maxPerMessage} images` }));
  const downloaded = [];
  for (const file of files.slice(0, intake.maxPerMessage)) {
    const link = linkOf(teamId, file);
    if (!link) {
      refused.push({ name: nameOf(file), reason: 'Slack gave no download link for it' });
      continue;
    }
    const got = await downloadFile(link, {
      allowedHosts: deps.fileHosts,
      authorization: `Bearer ${deps.botToken}`,
      maxBytes: intake.maxBytes,
      signal,
    });
    if (got.kind === 'file') downloaded.push(got.file);
    else refused.push(got);
  }
  const taken = splitIntake(await intake.take(downloaded));
  return { attachments: taken.attachments, refused: [...refused, ...taken.refused] };
}

function linkOf(teamId: string, file: SlackFile): FileLink | undefined {
  const url = file.url_private_download ?? file.url_private;
  return url ? { sourceKey: `slack:${teamId}:${file.id}`, name: nameOf(file), url } : undefined;
}

const nameOf = (file: SlackFile) => file.name ?? file.id;
