import type { Logger } from 'pino';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import type { ApprovalRules } from '../../core/approval-rules.ts';
import type { ArtifactStore } from '../../core/artifact-store.ts';
import type { EventOf } from '../../core/events.ts';
import type { ModelImage } from '../../core/transcript.ts';
import { loopbackUrl } from '../../agent/loopback-url.ts';
import { pngSize } from '../../agent/png-size.ts';
import { takeScreenshot } from '../../agent/screenshot-tool.ts';
import { unattendedRefusal } from '../gates/unattended-command.ts';
import { browserBeforeAfter } from './browser-pictures.ts';
import { touchesUi, uiPagesOf, type UiPage } from './ui-pages.ts';

/** Where the base commit is checked out for the "before" pictures: inside .git, so never part of a change. */
const BEFORE_DIR = '.git/patchbay-before';

/** Before/after screenshots of one change: the event that records them, and the pictures for the verifier. */
export type BeforeAfter = { event: EventOf<'ui-screenshots'>; images: ModelImage[] };

export type BeforeAfterDeps = {
  sandbox: Sandbox;
  artifacts: Pick<ArtifactStore, 'save' | 'list' | 'get'>;
  sessionId: string;
  log: Logger;
  signal: AbortSignal;
  /** The approval rules a retaken server command meets (installation, then repository). */
  approvalRules?: readonly ApprovalRules[];
};

/**
 * For a change from `baseCommit` to `commit` that touches UI files, the pages the agent looked at,
 * taken again on both: "after" in the workspace (at `commit`), "before" in a second checkout of
 * the base. Each picture is kept as an artifact. Undefined when the change touches no UI file or
 * the agent looked at no page. A page that cannot be taken on one side is noted, never fatal.
 */
export async function takeBeforeAfter(
  deps: BeforeAfterDeps,
  change: { baseCommit: string; commit: string; events: Parameters<typeof uiPagesOf>[0] },
): Promise<BeforeAfter | undefined> {
  const pages = uiPagesOf(change.events);
  const browser = await browserBeforeAfter(deps.artifacts, deps.sessionId);
  if ((pages.length === 0 && browser.pages.length === 0) || !touchesUi(await changedPaths(deps, change)))
    return undefined;
  const images: ModelImage[] = [...browser.images];
  const taken: EventOf<'ui-screenshots'>['pages'] = [...browser.pages];
  if (pages.length === 0) return { event: { type: 'ui-screenshots', commit: change.commit, pages: taken }, images };
  const before = await checkoutBase(deps, change.baseCommit);
  try {
    for (const page of pages) {
      const after = await takeSide(deps, page, 'after', undefined);
      const old = before
        ? await takeSide(deps, page, 'before', BEFORE_DIR)
        : { note: 'the base could not be checked out' };
      images.push(...[old.image, after.image].filter((i) => i !== undefined));
      const note = [old.note && `before: ${old.note}`, after.note && `after: ${after.note}`].filter(Boolean).join('; ');
      taken.push({
        url: page.url,
        ...(old.id && { before: old.id }),
        ...(after.id && { after: after.id }),
        ...(note && { note }),
      });
    }
  } finally {
    if (before) await removeBase(deps);
  }
  return { event: { type: 'ui-screenshots', commit: change.commit, pages: taken }, images };
}

async function changedPaths(deps: BeforeAfterDeps, change: { baseCommit: string; commit: string }): Promise<string[]> {
  const listed = await deps.sandbox.exec(`git diff --name-only ${change.baseCommit} ${change.commit}`, {
    signal: deps.signal,
    timeoutMs: 60_000,
  });
  return listed.exitCode === 0 ? listed.stdout.split('\n').filter(Boolean) : [];
}

type Side = { id?: string; image?: ModelImage; note?: string };

/** One page on one side, kept as an artifact named after the side. */
async function takeSide(
  deps: BeforeAfterDeps,
  page: UiPage,
  side: 'before' | 'after',
  cwd: string | undefined,
): Promise<Side> {
  if (page.server !== undefined) {
    // Retaken unattended, on the base commit too: the same gate as the harness's checks.
    const refusal = await unattendedRefusal(
      page.server,
      { sandbox: deps.sandbox, dir: cwd ?? '.' },
      deps.approvalRules ?? [],
    );
    if (refusal) return { note: `its server command was ${refusal}` };
  }
  let url: URL;
  try {
    url = loopbackUrl(page.url);
  } catch {
    return { note: 'not a loopback URL' };
  }
  const request = { url, width: page.width ?? 1280, height: page.height ?? 800, server: page.server };
  const shot = await takeScreenshot(deps.sandbox, request, deps.signal, cwd);
  if (shot.kind === 'refused') return { note: shot.message };
  const size = pngSize(shot.bytes);
  if (!size) return { note: 'Chromium took no PNG' };
  const name = `${side}: screenshot of ${url.href}`;
  const kept = await deps.artifacts.save({
    sessionId: deps.sessionId,
    kind: 'screenshot',
    name,
    mediaType: 'image/png',
    bytes: shot.bytes,
    ...size,
  });
  return { id: kept.id, image: { mediaType: 'image/png', data: shot.bytes.toString('base64'), name, ...size } };
}

/** A detached worktree of the base commit at BEFORE_DIR; false (and logged) when git refuses. */
async function checkoutBase(deps: BeforeAfterDeps, baseCommit: string): Promise<boolean> {
  await removeBase(deps);
  const added = await deps.sandbox.exec(`git worktree add --detach --force ${BEFORE_DIR} ${baseCommit}`, {
    signal: deps.signal,
    timeoutMs: 120_000,
  });
  if (added.exitCode !== 0)
    deps.log.warn({ stderr: added.stderr.slice(-500) }, 'the base could not be checked out for before screenshots');
  return added.exitCode === 0;
}

async function removeBase(deps: BeforeAfterDeps): Promise<void> {
  await deps.sandbox.exec(
    `git worktree remove --force ${BEFORE_DIR} 2>/dev/null; rm -rf ${BEFORE_DIR}; git worktree prune`,
    {
      signal: deps.signal,
      timeoutMs: 60_000,
    },
  );
}
