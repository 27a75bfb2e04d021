/** A frame of a Server-Sent Events stream, as a client sees it. */
export type SseFrame = {
  id?: string | undefined;
  event?: string | undefined;
  data?: string | undefined;
  comment?: string;
};

/**
 * Opens an event stream with fetch and collects its frames until `until` says enough or the
 * timeout passes; then disconnects. Parses the wire format itself so the test sees exactly what
 * the server wrote.
 */
export async function readSse(
  url: string,
  options: {
    headers?: Record<string, string>;
    until: (frames: SseFrame[]) => boolean;
    onOpen?: () => Promise<void> | void;
    timeoutMs?: number;
  },
): Promise<{ status: number; headers: Headers; frames: SseFrame[] }> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error('timed out waiting for SSE frames')),
    options.timeoutMs ?? 10_000,
  );
  const frames: SseFrame[] = [];
  try {
    const res = await fetch(url, {
      headers: { accept: 'text/event-stream', ...options.headers },
      signal: controller.signal,
    });
    if (!res.ok || !res.body) return { status: res.status, headers: res.headers, frames };
    await options.onOpen?.();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    while (!options.until(frames)) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended early');
      buffer += value;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        frames.push(parseFrame(buffer.slice(0, end)));
        buffer = buffer.slice(end + 2);
      }
    }
    return { status: res.status, headers: res.headers, frames };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

function parseFrame(text: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of text.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1).trim();
    const match = /^(id|event|data): ?(.*)$/.exec(line);
    if (match) frame[match[1] as 'id' | 'event' | 'data'] = match[2];
  }
  return frame;
}

export const eventFrames = (frames: SseFrame[]) => frames.filter((f) => f.data !== undefined);
export const seqs = (frames: SseFrame[]) => eventFrames(frames).map((f) => Number(f.id));
