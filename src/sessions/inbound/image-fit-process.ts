import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { imageMediaTypes, type ImageMediaType } from '../../core/transcript.ts';
import type { FitLimits, Fitted } from './image-fit.ts';

/** What decoding one picture may cost: CPU seconds, wall time and the decoder's JavaScript heap. */
export type DecodeLimits = { cpuSeconds: number; timeoutMs: number; heapMb: number };

export const defaultDecodeLimits: DecodeLimits = { cpuSeconds: 5, timeoutMs: 15_000, heapMb: 256 };

const childScript = fileURLToPath(new URL('./image-fit-child.ts', import.meta.url));

const Header = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    mediaType: z.enum(imageMediaTypes),
    width: z.number().int().positive(),
    height: z.number().int().positive(),
    byteLength: z.number().int().nonnegative(),
  }),
  z.object({ ok: z.literal(false), reason: z.string() }),
]);

/** `prlimit` (util-linux) where the host has it: the decoder's CPU seconds are then a hard limit. */
const prlimit = (process.env.PATH ?? '')
  .split(delimiter)
  .map((dir) => join(dir, 'prlimit'))
  .find((path) => path.startsWith('/') && existsSync(path));

/**
 * Fits a picture for the model in a process of its own, under `decode`'s limits: a picture that
 * is costly to decode (a compression bomb, a huge canvas) costs that process, which is killed at
 * the limit, and the server goes on. Resolves with the fitted picture or the reason it is refused.
 */
export function fitInChild(
  bytes: Uint8Array,
  mediaType: ImageMediaType,
  limits: FitLimits,
  decode: DecodeLimits = defaultDecodeLimits,
): Promise<Fitted | { unfit: string }> {
  const node = [
    process.execPath,
    `--max-old-space-size=${decode.heapMb}`,
    childScript,
    JSON.stringify({ ...limits, mediaType }),
  ];
  const [command, ...args] = prlimit ? [prlimit, `--cpu=${decode.cpuSeconds}`, '--', ...node] : node;
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'ignore'] });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const tooLong = { unfit: 'reading it took longer than the limit' };
    // At the limit the decoder is killed and the answer given at once (a later close changes nothing).
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(tooLong);
    }, decode.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stdin.on('error', () => {}); // the decoder may refuse before it has read everything
    child.on('error', () => resolve({ unfit: 'the image could not be read' }));
    child.on('close', (code) => {
      clearTimeout(timer);
      // Killed by its CPU limit (prlimit's SIGXCPU) or anything else: no answer but the reason.
      if (code === null) resolve(tooLong);
      else resolve(code === 0 ? parseOutput(Buffer.concat(chunks)) : { unfit: 'the image could not be read' });
    });
    child.stdin.end(bytes);
  });
}

/** The decoder's answer: its JSON line, then the fitted bytes. */
function parseOutput(out: Buffer): Fitted | { unfit: string } {
  const newline = out.indexOf(10);
  let header: z.infer<typeof Header>;
  try {
    header = Header.parse(JSON.parse(out.subarray(0, newline).toString('utf8')));
  } catch {
    return { unfit: 'the image could not be read' };
  }
  if (!header.ok) return { unfit: header.reason };
  const bytes = new Uint8Array(out.subarray(newline + 1));
  if (bytes.byteLength !== header.byteLength) return { unfit: 'the image could not be read' };
  return { bytes, mediaType: header.mediaType, width: header.width, height: header.height };
}
