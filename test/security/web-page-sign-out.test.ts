import { createServer as createHttpServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import { createApiFixture, type ApiFixture } from '../api/api-fixture.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';
import { launchChromium, openPage, type Browser } from '../web/chromium.ts';

const token = 'sign-out-page-token-0123456789';

// The page in real Chromium: its Sign out button ends the session on the server, and a page on
// another origin that posts a form or a no-cors fetch at the API (no token) changes nothing.
describe('the web page signs out on the server, and other origins cannot drive the API (Chromium)', () => {
  let fx: ApiFixture;
  let guarded: ApiServer;
  let open: ApiServer;
  let guardedBase: string;
  let openBase: string;
  let attacker: { port: number; close(): Promise<void> };
  let attackerHtml = '';
  let browser: Browser;

  beforeAll(async () => {
    fx = await createApiFixture();
    guarded = fx.server({ apiToken: token });
    guardedBase = await guarded.listen({ host: '127.0.0.1', port: 0 });
    open = fx.server({});
    openBase = await open.listen({ host: '127.0.0.1', port: 0 });
    // Another origin on loopback (another port), serving whatever page the test sets.
    attacker = await listenOnLoopback(
      createHttpServer((_req, res) => res.setHeader('content-type', 'text/html').end(attackerHtml)),
    );
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await attacker?.close();
    await fx?.close();
  });

  it('has a Sign out button that ends the session: the old cookie opens nothing afterwards', {
    timeout: 90_000,
  }, async () => {
    const { page, problems } = await openPage(browser.context, `${guardedBase}/`);
    await page.fill('#token', token);
    await page.click('#token-form button');
    await page.locator('#filter-status').waitFor();
    const [cookie] = await browser.context.cookies(guardedBase);
    expect(cookie?.name).toBe('patchbay_session');
    await page.click('#sign-out');
    await page.locator('#token-form').waitFor();
    // The browser forgot it, and the server too: the same value sent again is refused.
    expect(await browser.context.cookies(guardedBase)).toEqual([]);
    const replay = await fetch(`${guardedBase}/api/sessions`, {
      headers: { cookie: `${cookie!.name}=${cookie!.value}` },
    });
    expect(replay.status).toBe(401);
    expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
    await page.close();
  });

  // Hung once for its whole 90 s in a full-suite run (it takes about a second alone): retried once
  // while the cause is looked for; a refusal that fails does fail it, on both tries.
  it('refuses a cross-origin form post and no-cors fetch to stop a session, without a token', {
    timeout: 90_000,
    retry: 1,
  }, async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Fix it',
      repo: 'https://github.com/o/r',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const stopUrl = `${openBase}/api/sessions/${started.session.id}/stop`;
    attackerHtml = `<!doctype html><body>
<form id="f" method="POST" action="${stopUrl}" enctype="text/plain"><input name='{"a":"' value='"}'><button id="go">go</button></form>
</body>`;
    const page = await browser.context.newPage();
    await page.goto(`http://127.0.0.1:${attacker.port}/`);
    // A no-cors fetch from the other origin: the browser sends it, the page cannot read the answer.
    const sent = await page.evaluate(async (url) => {
      const response = await fetch(url, {
        method: 'POST',
        mode: 'no-cors',
        body: '{}',
        headers: { 'content-type': 'text/plain' },
      });
      return response.type;
    }, stopUrl);
    expect(sent).toBe('opaque');
    // A form post from the other origin (a top-level navigation, which carries no custom header).
    const [answer] = await Promise.all([
      page.waitForResponse((response) => response.url() === stopUrl, { timeout: 60_000 }),
      page.click('#go'),
    ]);
    expect(answer.status()).toBe(403);
    expect((await fx.store.get(started.session.id))?.status).toBe('queued');
    await page.close();
  });
});
