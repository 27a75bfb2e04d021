import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArtifactLinks } from '../../src/api/artifact-links.ts';
import type { ApiServer } from '../../src/api/server.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { createApiFixture, type ApiFixture } from '../api/api-fixture.ts';
import { encodePng } from '../helpers/png-encode.ts';
import { launchChromium, openPage, type Browser } from './chromium.ts';

/**
 * Browser steps on the session page, in Chromium: each step's line names the element it acted on
 * (as the page's snapshot named it) and the URL it ended at, and a browser screenshot shows on its
 * step like the screenshot tool's; the side panel lists the background processes running now.
 */
describe('browser steps on the session page', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    fx = await createApiFixture();
    const links = createArtifactLinks({ secret: 'k'.repeat(40), publicUrl: 'http://127.0.0.1' });
    app = fx.server({ artifacts: { store: createPgArtifactStore(fx.db), links } });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  it('shows the action, the element and the resulting URL, with the picture', { timeout: 90_000 }, async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Count to three',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const shot = await createPgArtifactStore(fx.db).save({
      sessionId: id,
      kind: 'screenshot',
      name: 'browser: http://127.0.0.1:8171/app',
      mediaType: 'image/png',
      bytes: encodePng(64, 40, () => [0, 128, 0]),
      width: 64,
      height: 40,
    });
    const page = (url: string) =>
      `URL: ${url} (was http://127.0.0.1:8171/)\nTitle: Counter\nSnapshot:\n- heading "Welcome" [level=1]\n- button "Add one" [ref=e4]`;
    const step = (callId: string, name: string, input: unknown, output: string) => [
      { event: { type: 'tool-start' as const, callId, name, input } },
      { event: { type: 'tool-end' as const, callId, name, isError: false, output, durationMs: 300 } },
    ];
    const server = 'exec python3 -m http.server 8171 --bind 127.0.0.1';
    const watcher = 'npm run watch';
    await fx.store.append(id, [
      { event: { type: 'status-changed', from: 'queued', to: 'running' } },
      ...step(
        'p1',
        'process_start',
        { command: server, port: 8171 },
        `Started p1 running: ${server}\nOutput so far:\n`,
      ),
      ...step('p2', 'process_start', { command: watcher }, `Started p2 running: ${watcher}\nOutput so far:\n`),
      ...step('p3', 'process_stop', { id: 'p2' }, `Stopped. p2 ended (exit -15): ${watcher}`),
      ...step('c1', 'browser_click', { ref: 'e4' }, page('http://127.0.0.1:8171/app')),
      ...step(
        'c2',
        'browser_screenshot',
        {},
        `Screenshot of http://127.0.0.1:8171/app (64x40), attached. Kept with the session as artifact ${shot.id}.`,
      ),
    ]);

    const { page: tab, problems } = await openPage(browser.context, `${base}/sessions/${id}`);
    const click = tab.locator('details.tool[data-call="c1"] summary');
    await click.waitFor();
    expect(await click.locator('.name').textContent()).toBe('browser_click');
    expect(await click.locator('.gist').textContent()).toBe('button "Add one" → http://127.0.0.1:8171/app');
    await tab.waitForFunction(() =>
      [...document.querySelectorAll<HTMLImageElement>('.thumb img')].some((i) => i.naturalWidth === 64),
    );
    expect(await tab.locator('.thumb img').getAttribute('alt')).toBe('Screenshot of http://127.0.0.1:8171/app');
    // The side panel lists the server still running, not the watcher that was stopped.
    expect(await tab.locator('#processes li').allTextContents()).toEqual([`p1 ${server}`]);
    // The run ends: every process it started ended with it.
    await fx.store.append(id, [{ event: { type: 'status-changed', from: 'running', to: 'completed' } }]);
    await tab.locator('#processes').waitFor({ state: 'detached' });
    expect(problems).toEqual([]);
  });
});
