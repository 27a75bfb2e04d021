import { Writable } from 'node:stream';

/** A stream a CLI command writes to, and what it wrote so far. */
export function textSink(): { stream: NodeJS.WritableStream; text(): string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}
