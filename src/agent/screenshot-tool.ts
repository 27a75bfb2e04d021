import { z } from 'zod';
import { modelImageMaxBytes } from '../core/image-format.ts';
import type { ModelImage } from '../core/transcript.ts';
import { gateCommand } from './command-gate.ts';
import { checkCommand, type CommandPolicy } from './command-policy.ts';
import { loopbackUrl } from './loopback-url.ts';
import { pngSize } from './png-size.ts';
import { trimBottom } from './png-trim.ts';
import { SCREENSHOT_SCRIPT, screenshotEnv } from './screenshot-script.ts';
import type { Tool, ToolContext, ToolOutput } from './tool.ts';

/** The tallest picture a full-page screenshot takes (the window is made this tall). */
const FULL_PAGE_HEIGHT = 4096;
/** The largest PNG handed to the model (Anthropic takes at most 5 MB an image, counted as base64). */
const MAX_PNG_BYTES = modelImageMaxBytes;
const WAIT_SECONDS = 30;
const DEFAULT_HEIGHT = 800;

/** The screenshot tool's input: also what the harness reads back from its calls to retake a page. */
export const ScreenshotInput = z.object({
  url: z.string().describe('http(s) URL on 127.0.0.1, localhost or [::1]: a server you run in the sandbox'),
  width: z.number().int().min(200).max(3840).optional().describe('Window width in pixels (default 1280)'),
  height: z.number().int().min(200).max(FULL_PAGE_HEIGHT).optional().describe('Window height in pixels (default 800)'),
  fullPage: z
    .boolean()
    .optional()
    .describe(
      `The whole page, down to the end of its content (at most ${FULL_PAGE_HEIGHT} pixels), instead of one window (default false)`,
    ),
  server: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Shell command, run in the workspace, that starts the server for this screenshot (each command runs in a fresh process, so a server from an earlier shell call is gone). It is stopped afterwards.',
    ),
});
type ScreenshotInput = z.infer<typeof ScreenshotInput>;

/**
 * The `screenshot` tool: headless Chromium inside the sandbox opens a page the agent's own server
 * serves there, and the picture goes back to the model (so it can look at its work) and is kept
 * with the session as an artifact. Only loopback URLs are opened, and the server command goes through
 * the shell's gate (approvals, then the command policy): a hold or a refusal comes before anything runs.
 */
export function createScreenshotTool(options: { policy?: CommandPolicy | undefined } = {}): Tool<ScreenshotInput> {
  const policy = options.policy ?? checkCommand;
  return {
    name: 'screenshot',
    description:
      'Take a screenshot of a web page served inside the sandbox (http://127.0.0.1:PORT/...) with headless Chromium, and see it. Give `server` to start the server in the same command. When your change touches UI files, the pages you took are taken again before (base commit) and after (your commit) for the pull request, so take each page the change affects.',
    inputSchema: ScreenshotInput,
    timeLimitMs: () => (WAIT_SECONDS + 90) * 1000,
    async execute(input, ctx) {
      const url = loopbackUrl(input.url);
      // The server command is a shell command like run_shell's, through the same gate: the
      // approval rules (held for a person, refused) and the command policy.
      if (input.server !== undefined) {
        const gate = await gateCommand(input.server, ctx, policy, 'Server command');
        if (gate.kind === 'held') return gate.output;
      }
      const width = input.width ?? 1280;
      const height = input.fullPage ? FULL_PAGE_HEIGHT : (input.height ?? DEFAULT_HEIGHT);
      const taken = await takeScreenshot(ctx.sandbox, { url, width, height, server: input.server }, ctx.signal);
      if (taken.kind === 'refused') return { content: taken.message, isError: true };
      // A full page is taken in a tall window: what lies below the page's content is cut off.
      const bytes = input.fullPage ? trimBottom(taken.bytes, input.height ?? DEFAULT_HEIGHT) : taken.bytes;
      const size = pngSize(bytes);
      if (!size) return { content: `Chromium's screenshot of ${url.href} is not a PNG.`, isError: true };
      const image: ModelImage = {
        mediaType: 'image/png',
        data: bytes.toString('base64'),
        name: `screenshot of ${url.href}`,
        ...size,
      };
      const said = `Screenshot of ${url.href} (${size.width}x${size.height}), attached.`;
      return { content: `${said} ${await keepWithSession(image, bytes, ctx)}`.trim(), images: [image] };
    },
  };
}

/** A page to take: a loopback URL (checked by loopbackUrl), the window, the server command (policy-checked). */
export type ScreenshotRequest = { url: URL; width: number; height: number; server?: string | undefined };

/**
 * Takes one screenshot in the sandbox with headless Chromium: the PNG's bytes, or why not as a
 * sentence for the model. `cwd` is where the server command runs (the workspace by default).
 */
export async function takeScreenshot(
  sandbox: ToolContext['sandbox'],
  request: ScreenshotRequest,
  signal: AbortSignal,
  cwd?: string,
): Promise<{ kind: 'taken'; bytes: Buffer } | { kind: 'refused'; message: string }> {
  const { url } = request;
  const result = await sandbox.exec(SCREENSHOT_SCRIPT, {
    env: screenshotEnv({
      url: url.href,
      width: request.width,
      height: request.height,
      server: request.server,
      waitSeconds: WAIT_SECONDS,
    }),
    timeoutMs: (WAIT_SECONDS + 60) * 1000,
    maxOutputBytes: Math.ceil((MAX_PNG_BYTES * 4) / 3) + 16,
    signal,
    ...(cwd && { cwd }),
  });
  if (result.timedOut) return { kind: 'refused', message: `The screenshot of ${url.href} did not finish in time.` };
  if (result.exitCode !== 0)
    return {
      kind: 'refused',
      message: `No screenshot of ${url.href}: ${result.stderr.trim() || `exit ${result.exitCode}`}`,
    };
  if (result.truncatedBytes.stdout > 0)
    return {
      kind: 'refused',
      message: `The screenshot of ${url.href} is over ${MAX_PNG_BYTES} bytes: take a smaller one.`,
    };
  return { kind: 'taken', bytes: Buffer.from(result.stdout, 'base64') };
}

/** Keeps the picture with the session; says so (or why not) for the model, '' when there is nowhere to keep it. */
export async function keepWithSession(
  image: ModelImage,
  bytes: Uint8Array,
  ctx: ToolContext,
): Promise<ToolOutput['content']> {
  if (!ctx.artifacts) return '';
  try {
    const kept = await ctx.artifacts.save({
      sessionId: ctx.sessionId,
      kind: 'screenshot',
      name: image.name,
      mediaType: image.mediaType,
      bytes,
      width: image.width,
      height: image.height,
    });
    return `Kept with the session as artifact ${kept.id}.`;
  } catch (error) {
    ctx.log.warn({ err: error }, 'the screenshot could not be kept with the session');
    return 'It could not be kept with the session.';
  }
}
