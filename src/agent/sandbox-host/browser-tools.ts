import { z } from 'zod';
import { modelImageMaxBytes } from '../../core/image-format.ts';
import type { ModelImage } from '../../core/transcript.ts';
import { httpUrl } from '../loopback-url.ts';
import { pngSize } from '../png-size.ts';
import { keepWithSession } from '../screenshot-tool.ts';
import type { AnyTool, Tool, ToolContext, ToolOutput } from '../tool.ts';
import { callHost, type HostAnswer } from './process-host.ts';

/** What a browser screenshot kept with the session is named: "browser: <url>" (the before/after pictures read it). */
export const BROWSER_PICTURE_PREFIX = 'browser: ';
const ACTION_SECONDS = 60;

const Ref = z
  .string()
  .regex(/^e\d+$/)
  .describe('The element reference from the latest browser_snapshot, e.g. e3.');

const OpenInput = z.object({
  url: z
    .string()
    .describe('An http(s) URL: a server in the sandbox (http://127.0.0.1:PORT/) or a host the network policy allows.'),
});
const ClickInput = z.object({ ref: Ref });
const TypeInput = z.object({
  ref: Ref,
  text: z.string().max(20_000).describe('Replaces what the field holds.'),
  submit: z.boolean().optional().describe('Press Enter after typing (submits its form).'),
});
const SelectInput = z.object({ ref: Ref, values: z.array(z.string()).min(1).describe('Option values or labels.') });
const WaitInput = z
  .object({
    text: z.string().min(1).optional().describe('Wait until the page shows this text.'),
    selector: z.string().min(1).optional().describe('Wait until an element matches this CSS selector.'),
    gone: z.boolean().optional().describe('Wait until the text or element is gone instead.'),
    networkIdle: z.boolean().optional().describe('Wait until no request is in flight.'),
    seconds: z.number().int().min(1).max(120).optional().describe('At most this long (default 10).'),
  })
  .refine((w) => w.text || w.selector || w.networkIdle, 'give text, selector or networkIdle');
const ConsoleInput = z.object({});
const ScreenshotInput = z.object({
  fullPage: z.boolean().optional().describe('The whole page instead of the 1280x800 window.'),
});

/** A URL the browser may open: http(s), no user name or password (the egress proxy judges the host). */
export function browserUrl(raw: string): string {
  return httpUrl(raw).href;
}

const PageState = z.object({
  url: z.string(),
  title: z.string(),
  snapshot: z.string(),
  dialogs: z.array(z.object({ type: z.string().nullish(), message: z.string().nullish() })).catch([]),
  newErrors: z.array(z.object({ kind: z.string().nullish(), text: z.string().nullish() })).catch([]),
});

/** The page after an action, for the model: where it is, dialogs and new errors, then the snapshot. */
export function describePage(answer: HostAnswer, before?: string): ToolOutput {
  if (answer.kind === 'refused') return { content: answer.message, isError: true };
  const parsed = PageState.safeParse(answer.result);
  if (!parsed.success) return { content: 'The browser gave an answer that is not a page.', isError: true };
  const page = parsed.data;
  const moved = before !== undefined && before !== page.url ? ` (was ${before})` : '';
  const lines = [`URL: ${page.url}${moved}`, `Title: ${page.title}`];
  for (const dialog of page.dialogs)
    lines.push(`Dialog (${dialog.type ?? 'alert'}, accepted): ${dialog.message ?? ''}`);
  if (page.newErrors.length > 0)
    lines.push(
      'New console errors:',
      ...page.newErrors.slice(-20).map((e) => `- ${e.kind ?? 'error'}: ${e.text ?? ''}`),
    );
  lines.push('Snapshot:', page.snapshot || '(the page is empty)');
  return { content: lines.join('\n') };
}

/** The URL the browser was last seen at, per sandbox handle: each answer says when it moved. */
const lastUrl = new WeakMap<ToolContext['sandbox'], string>();

async function act(ctx: ToolContext, request: Record<string, unknown>, seconds = ACTION_SECONDS): Promise<ToolOutput> {
  const answer = await callHost(ctx.sandbox, request, { signal: ctx.signal, timeoutMs: (seconds + 30) * 1000 });
  const before = lastUrl.get(ctx.sandbox);
  if (answer.kind === 'done' && typeof answer.result.url === 'string') lastUrl.set(ctx.sandbox, answer.result.url);
  return describePage(answer, before);
}

function browserTool<I>(
  name: string,
  description: string,
  inputSchema: z.ZodType<I>,
  request: (input: I) => Record<string, unknown>,
): Tool<I> {
  return {
    name,
    description: `${description} Answers with the page's URL, dialogs, new console errors and its snapshot.`,
    inputSchema,
    timeLimitMs: () => (ACTION_SECONDS + 60) * 1000,
    execute: (input, ctx) => act(ctx, request(input)),
  };
}

function createWaitTool(): Tool<z.infer<typeof WaitInput>> {
  return {
    name: 'browser_wait_for',
    description:
      'Wait until the page shows (or no longer shows) a text or an element, or until the network is idle. Answers with the page.',
    inputSchema: WaitInput,
    timeLimitMs: (input) => ((input.seconds ?? 10) + 60) * 1000,
    execute: (input, ctx) => act(ctx, { op: 'wait', ...input, seconds: input.seconds ?? 10 }, input.seconds ?? 10),
  };
}

const ConsoleAnswer = z.object({
  entries: z.array(z.object({ kind: z.string().nullish(), text: z.string().nullish() })),
  next: z.number(),
});

/** Console messages and page errors since the page opened (verbose ones left out). */
function createConsoleTool(): Tool<z.infer<typeof ConsoleInput>> {
  return {
    name: 'browser_console',
    description: "The browser's console messages, page errors and failed requests since it opened (the last 200).",
    inputSchema: ConsoleInput,
    async execute(_input, ctx) {
      const answer = await callHost(ctx.sandbox, { op: 'console' }, { signal: ctx.signal, timeoutMs: 60_000 });
      if (answer.kind === 'refused') return { content: answer.message, isError: true };
      const parsed = ConsoleAnswer.safeParse(answer.result);
      if (!parsed.success) return { content: 'The browser gave an answer that is not a console.', isError: true };
      const shown = parsed.data.entries.filter((e) => e.kind !== 'verbose');
      if (shown.length === 0) return { content: 'The console is empty.' };
      return { content: shown.map((e) => `- ${e.kind ?? 'log'}: ${e.text ?? ''}`).join('\n') };
    },
  };
}

const ShotAnswer = z.object({ url: z.string(), title: z.string(), png: z.string() });

/** A picture of the page for the model, kept with the session as an artifact. */
function createBrowserScreenshotTool(): Tool<z.infer<typeof ScreenshotInput>> {
  return {
    name: 'browser_screenshot',
    description:
      "Take a picture of the page the browser shows, and see it. It is kept with the session; the first and last pictures of a page become the pull request's before/after pictures when your change touches UI files.",
    inputSchema: ScreenshotInput,
    timeLimitMs: () => 120_000,
    async execute(input, ctx) {
      const answer = await callHost(
        ctx.sandbox,
        { op: 'screenshot', fullPage: input.fullPage ?? false },
        { signal: ctx.signal, timeoutMs: 90_000, maxOutputBytes: Math.ceil((modelImageMaxBytes * 4) / 3) + 4096 },
      );
      if (answer.kind === 'refused') return { content: answer.message, isError: true };
      const shot = ShotAnswer.safeParse(answer.result);
      if (!shot.success) return { content: 'The browser gave no picture.', isError: true };
      const bytes = Buffer.from(shot.data.png, 'base64');
      const size = pngSize(bytes);
      if (!size) return { content: "The browser's picture is not a PNG.", isError: true };
      if (bytes.length > modelImageMaxBytes)
        return { content: 'The picture is too large: take the window, not the full page.', isError: true };
      const image: ModelImage = {
        mediaType: 'image/png',
        data: shot.data.png,
        name: `${BROWSER_PICTURE_PREFIX}${shot.data.url}`,
        ...size,
      };
      const kept = await keepWithSession(image, bytes, ctx);
      return {
        content: `Screenshot of ${shot.data.url} (${size.width}x${size.height}), attached. ${kept}`.trim(),
        images: [image],
      };
    },
  };
}

/** The browser tools: one Chromium per session in the sandbox's process host. */
export function createBrowserTools(): AnyTool[] {
  return [
    browserTool(
      'browser_open',
      'Open a URL in the browser (one headless Chromium per session, inside the sandbox).',
      OpenInput,
      (i) => ({
        op: 'open',
        url: browserUrl(i.url),
      }),
    ),
    browserTool(
      'browser_snapshot',
      'The page as an accessibility tree in text; elements you can act on carry [ref=eN], valid while the page stays.',
      z.object({}),
      () => ({ op: 'snapshot' }),
    ),
    browserTool('browser_click', 'Click an element.', ClickInput, (i) => ({ op: 'click', ref: i.ref })),
    browserTool(
      'browser_type',
      'Type into a field (replacing its text), optionally pressing Enter.',
      TypeInput,
      (i) => ({
        op: 'type',
        ...i,
      }),
    ),
    browserTool('browser_select', 'Choose options of a select element.', SelectInput, (i) => ({ op: 'select', ...i })),
    createWaitTool(),
    createConsoleTool(),
    createBrowserScreenshotTool(),
  ];
}
