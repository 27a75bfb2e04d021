import type { StoredEvent } from '../../core/events.ts';
import { ScreenshotInput } from '../../agent/screenshot-tool.ts';

/**
 * Files whose change shows on a page: markup, styles and UI components. A small rule on purpose:
 * a change to these gets before/after screenshots; anything else does not need them.
 */
const UI_FILE = /\.(html?|css|scss|sass|less|tsx|jsx|vue|svelte)$/i;

/** Whether a change to these paths (as `git diff --name-only` lists them) touches the user interface. */
export function touchesUi(paths: readonly string[]): boolean {
  return paths.some((path) => UI_FILE.test(path));
}

/** A page the agent looked at: where it is and the command that serves it, as it gave them to `screenshot`. */
export type UiPage = {
  url: string;
  server?: string | undefined;
  width?: number | undefined;
  height?: number | undefined;
};

/** The most pages retaken before and after one change. */
export const MAX_UI_PAGES = 3;

/**
 * The pages to show before and after: those the agent took a screenshot of that worked, unique by
 * URL (the latest call's server command and window win), the latest MAX_UI_PAGES of them. The
 * agent names the pages by looking at them, so no second way to name them is needed (a full-page
 * call is retaken as one window).
 */
export function uiPagesOf(events: readonly StoredEvent[]): UiPage[] {
  const worked = new Set<string>();
  for (const { event } of events)
    if (event.type === 'tool-end' && event.name === 'screenshot' && !event.isError) worked.add(event.callId);
  const pages = new Map<string, UiPage>();
  for (const { event } of events) {
    if (event.type !== 'tool-start' || event.name !== 'screenshot' || !worked.has(event.callId)) continue;
    const input = ScreenshotInput.safeParse(event.input);
    if (!input.success) continue;
    const { url, server, width, height } = input.data;
    pages.delete(url);
    pages.set(url, { url, server, width, height });
  }
  return [...pages.values()].slice(-MAX_UI_PAGES);
}
