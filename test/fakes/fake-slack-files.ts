import type { IncomingMessage } from 'node:http';

/** A file uploaded through files.uploadV2, as the fake holds it. */
export type FakeSlackFile = {
  id: string;
  filename: string;
  /** The length getUploadURLExternal was told. */
  length: number;
  /** What reached the upload URL; undefined until then. */
  bytes?: Buffer;
  /** Set by files.completeUploadExternal. */
  title?: string;
  channel?: string;
  threadTs?: string;
  initialComment?: string;
};

type Answer = Record<string, unknown>;

/**
 * Slack's three steps of a file upload (what the SDK's files.uploadV2 does), in their wire
 * format: `files.getUploadURLExternal {filename, length}` → `{upload_url, file_id}`; a POST of
 * the bytes (raw, or multipart with the file in any field) to `upload_url` → 200 `OK - <length>`;
 * `files.completeUploadExternal {files: '[{"id","title"}]', channel_id, thread_ts, initial_comment}`
 * → `{files: [...]}`. It refuses a length that is not a positive integer, an upload of another
 * length than announced or to an unknown id, and completing a file that was never uploaded or
 * that was completed already.
 */
export function createFakeSlackFiles(options: { uploadBase: () => string; channels: Set<string> }) {
  const files: FakeSlackFile[] = [];
  let counter = 0;
  return {
    files,
    getUploadUrl(args: Record<string, unknown>): Answer {
      const length = Number(args.length);
      if (typeof args.filename !== 'string' || args.filename === '')
        return { ok: false, error: 'invalid_arguments', detail: 'missing filename' };
      if (!Number.isInteger(length) || length <= 0)
        return { ok: false, error: 'invalid_arguments', detail: `length ${String(args.length)}` };
      counter += 1;
      const id = `F0FAKE${String(counter).padStart(5, '0')}`;
      files.push({ id, filename: args.filename, length });
      return { ok: true, upload_url: `${options.uploadBase()}/upload/v1/${id}`, file_id: id };
    },
    /** The POST to an upload URL: the status and body to answer with. */
    async upload(req: IncomingMessage, id: string, raw: Buffer): Promise<{ status: number; body: string }> {
      const file = files.find((f) => f.id === id);
      if (!file || file.bytes) return { status: 404, body: 'upload_url_not_found' };
      const bytes = await fileBytes(req, raw);
      if (bytes.length !== file.length)
        return { status: 400, body: `expected ${file.length} bytes, got ${bytes.length}` };
      file.bytes = bytes;
      return { status: 200, body: `OK - ${bytes.length}` };
    },
    complete(args: Record<string, unknown>): Answer {
      const listed = typeof args.files === 'string' ? safeJson(args.files) : args.files;
      if (!Array.isArray(listed) || listed.length === 0)
        return { ok: false, error: 'invalid_arguments', detail: 'files must be a JSON array of {id, title}' };
      const channel = typeof args.channel_id === 'string' && args.channel_id ? args.channel_id : undefined;
      if (channel && !options.channels.has(channel)) return { ok: false, error: 'channel_not_found' };
      const threadTs = typeof args.thread_ts === 'string' && args.thread_ts ? args.thread_ts : undefined;
      if (threadTs && !channel) return { ok: false, error: 'invalid_arguments', detail: 'thread_ts needs channel_id' };
      const done: FakeSlackFile[] = [];
      for (const entry of listed as { id?: unknown; title?: unknown }[]) {
        const file = files.find((f) => f.id === entry.id);
        if (!file?.bytes || file.title !== undefined)
          return { ok: false, error: 'file_not_found', detail: String(entry.id) };
        done.push(file);
      }
      for (const [i, file] of done.entries()) {
        const entry = (listed as { title?: unknown }[])[i];
        file.title = typeof entry?.title === 'string' ? entry.title : file.filename;
        if (channel) file.channel = channel;
        if (threadTs) file.threadTs = threadTs;
        if (typeof args.initial_comment === 'string') file.initialComment = args.initial_comment;
      }
      return {
        ok: true,
        files: done.map((f) => ({ id: f.id, title: f.title, name: f.filename, size: f.length, mimetype: 'image/png' })),
      };
    },
  };
}

/** The uploaded bytes: the whole body, or the one file of a multipart form. */
async function fileBytes(req: IncomingMessage, raw: Buffer): Promise<Buffer> {
  const type = req.headers['content-type'] ?? '';
  if (!type.startsWith('multipart/form-data')) return raw;
  const form = await new Request('http://upload/', {
    method: 'POST',
    headers: { 'content-type': type },
    body: new Uint8Array(raw),
  }).formData();
  for (const value of form.values()) if (typeof value !== 'string') return Buffer.from(await value.arrayBuffer());
  return Buffer.alloc(0);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
