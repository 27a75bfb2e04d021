/**
 * The process a picture is decoded in (image-fit-process.ts starts it): the picture's bytes on
 * stdin, the limits as the one argument; on stdout one JSON line (the fitted picture's type and
 * size, or why it is unfit) and then the fitted bytes. Whatever a hostile picture costs, it costs
 * here, under this process's CPU and time limits, not in the server.
 */
import sharp from 'sharp';
import { fitForModel, type FitLimits, Unfit } from './image-fit.ts';
import type { ImageMediaType } from '../../core/transcript.ts';

sharp.concurrency(1);
sharp.cache(false);

const { mediaType, ...limits } = JSON.parse(process.argv[2] ?? '{}') as FitLimits & { mediaType: ImageMediaType };
const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
try {
  const fitted = await fitForModel(new Uint8Array(Buffer.concat(chunks)), mediaType, limits);
  const { bytes, ...rest } = fitted;
  process.stdout.write(`${JSON.stringify({ ok: true, ...rest, byteLength: bytes.byteLength })}\n`);
  process.stdout.write(bytes);
} catch (error) {
  const reason = error instanceof Unfit ? error.message : 'the image could not be read';
  process.stdout.write(`${JSON.stringify({ ok: false, reason })}\n`);
}
