import type { ArtifactInfo, ArtifactStore } from '../../core/artifact-store.ts';
import type { EventOf } from '../../core/events.ts';
import type { ModelImage } from '../../core/transcript.ts';
import { BROWSER_PICTURE_PREFIX } from '../../agent/sandbox-host/browser-tools.ts';
import { MAX_UI_PAGES } from './ui-pages.ts';

type Page = EventOf<'ui-screenshots'>['pages'][number];

/**
 * Before/after pictures from the session's own browser: for each page the agent took with
 * browser_screenshot at least twice, its first picture (before the change) and its last (after).
 * They come from the same browser that walked the flow (a login, three clicks), which retaking a
 * URL on a fresh page could not reproduce. The latest MAX_UI_PAGES pages, with their pictures for
 * the verifier.
 */
export async function browserBeforeAfter(
  artifacts: Pick<ArtifactStore, 'list' | 'get'>,
  sessionId: string,
): Promise<{ pages: Page[]; images: ModelImage[] }> {
  const byUrl = new Map<string, ArtifactInfo[]>();
  for (const artifact of await artifacts.list(sessionId)) {
    if (artifact.kind !== 'screenshot' || !artifact.name.startsWith(BROWSER_PICTURE_PREFIX)) continue;
    const url = artifact.name.slice(BROWSER_PICTURE_PREFIX.length);
    const earlier = byUrl.get(url) ?? [];
    // Re-inserted, so the pages come in the order of their latest pictures.
    byUrl.delete(url);
    byUrl.set(url, [...earlier, artifact]);
  }
  const pages: Page[] = [];
  const images: ModelImage[] = [];
  for (const [url, taken] of [...byUrl].filter(([, shots]) => shots.length >= 2).slice(-MAX_UI_PAGES)) {
    const [before, after] = [taken[0]!, taken.at(-1)!];
    pages.push({ url, before: before.id, after: after.id });
    for (const [side, info] of [
      ['before', before],
      ['after', after],
    ] as const) {
      const stored = await artifacts.get(info.id);
      if (stored)
        images.push({
          mediaType: stored.mediaType,
          data: Buffer.from(stored.bytes).toString('base64'),
          name: `${side}: ${info.name}`,
          ...(stored.width !== undefined &&
            stored.height !== undefined && { width: stored.width, height: stored.height }),
        });
    }
  }
  return { pages, images };
}
