import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArtifactLinks } from '../../src/api/artifact-links.ts';
import type { ApiServer } from '../../src/api/server.ts';
import { createImageIntake, defaultIntakeLimits } from '../../src/sessions/inbound/image-intake.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { createApiFixture, type ApiFixture } from '../api/api-fixture.ts';
import { encodePng } from '../helpers/png-encode.ts';
import { launchChromium, openPage, screenshotDir, type Browser } from './chromium.ts';

const solid = (rgb: [number, number, number]) => encodePng(64, 40, () => rgb);

/**
 * A session's pictures on its page in Chromium: the screenshot the agent took shows on its tool
 * step and the before/after pair on its own row, each opening the viewer, which steps through all
 * of them with the arrow keys and closes with Esc.
 */
describe('pictures on the session page, in Chromium', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    fx = await createApiFixture();
    const links = createArtifactLinks({ secret: 'k'.repeat(40), publicUrl: 'http://127.0.0.1' });
    const imageIntake = createImageIntake({ artifacts: createPgArtifactStore(fx.db), limits: defaultIntakeLimits });
    app = fx.server({ artifacts: { store: createPgArtifactStore(fx.db), links }, imageIntake });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await fx?.close();
  });

  it('shows the screenshots inline and in a viewer that Esc closes and the arrows step through', {
    timeout: 90_000,
  }, async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Make the button blue',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const artifacts = createPgArtifactStore(fx.db);
    const keep = (name: string, rgb: [number, number, number]) =>
      artifacts.save({
        sessionId: id,
        kind: 'screenshot',
        name,
        mediaType: 'image/png',
        bytes: solid(rgb),
        width: 64,
        height: 40,
      });
    const shot = await keep('screenshot of http://127.0.0.1:8000/', [0, 0, 255]);
    const before = await keep('before', [255, 0, 0]);
    const after = await keep('after', [0, 0, 255]);
    const url = 'http://127.0.0.1:8000/';
    await fx.store.append(id, [
      { event: { type: 'tool-start', callId: 'c1', name: 'screenshot', input: { url } } },
      {
        event: {
          type: 'tool-end',
          callId: 'c1',
          name: 'screenshot',
          isError: false,
          output: `Screenshot of ${url} (64x40), attached. Kept with the session as artifact ${shot.id}.`,
          durationMs: 900,
        },
      },
      {
        event: { type: 'ui-screenshots', commit: 'a'.repeat(40), pages: [{ url, before: before.id, after: after.id }] },
      },
    ]);

    const { page, problems } = await openPage(browser.context, `${base}/sessions/${id}`);
    const thumbs = page.locator('.thumb img');
    await page.locator('.item-screenshots .thumb').nth(1).waitFor();
    expect(await thumbs.count()).toBe(3);
    // Every picture really loaded (a broken link has no natural size).
    await page.waitForFunction(() =>
      [...document.querySelectorAll<HTMLImageElement>('.thumb img')].every((i) => i.naturalWidth === 64),
    );
    await page.screenshot({ path: join(screenshotDir, 'session-pictures.png'), fullPage: true });

    const caption = page.locator('.viewer figcaption');
    await page.locator('.item-screenshots .thumb').first().click();
    await expect.poll(() => caption.textContent()).toContain('Before: http://127.0.0.1:8000/');
    expect(await caption.textContent()).toContain('2 of 3');
    expect(await page.locator('.viewer img').evaluate((i: HTMLImageElement) => i.naturalWidth)).toBe(64);
    await page.screenshot({ path: join(screenshotDir, 'session-picture-viewer.png') });
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => caption.textContent()).toContain('3 of 3');
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => caption.textContent()).toContain('1 of 3');
    expect(await caption.textContent()).toContain(`Screenshot of ${url}`);
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => caption.textContent()).toContain('3 of 3');
    await page.keyboard.press('Escape');
    await page.locator('.viewer').waitFor({ state: 'detached' });
    expect(problems).toEqual([]);
  });

  it('shows the pictures a person attached on their message, in the same viewer', { timeout: 90_000 }, async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'The button is the wrong colour',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const bug = await createPgArtifactStore(fx.db).save({
      sessionId: id,
      kind: 'attachment',
      name: 'bug.png',
      mediaType: 'image/png',
      bytes: solid([0, 200, 0]),
      width: 64,
      height: 40,
    });
    const attachment = { artifactId: bug.id, mediaType: 'image/png' as const, name: 'bug.png', byteSize: 100 };
    await fx.store.append(id, [
      {
        event: {
          type: 'user-message',
          actor: { source: 'slack', id: 'U1', name: 'Grace' },
          text: 'Here it is',
          attachments: [attachment],
        },
      },
    ]);

    const { page, problems } = await openPage(browser.context, `${base}/sessions/${id}`);
    const thumb = page.locator('.item-user .thumb img');
    await thumb.waitFor();
    expect(await thumb.getAttribute('alt')).toBe('Grace: bug.png');
    await page.waitForFunction(
      () => document.querySelector<HTMLImageElement>('.item-user .thumb img')?.naturalWidth === 64,
    );
    await page.locator('.item-user .thumb').click();
    await expect.poll(() => page.locator('.viewer figcaption').textContent()).toContain('Grace: bug.png');
    // The viewer listens for keys once it is shown (an effect after the paint): press until it closes.
    await expect
      .poll(async () => {
        await page.keyboard.press('Escape');
        return page.locator('.viewer').count();
      })
      .toBe(0);
    expect(problems).toEqual([]);
  });

  it('sends a picture attached in the message box with the message, and shows it on it', {
    timeout: 90_000,
  }, async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'The button is the wrong colour',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const { page, problems } = await openPage(browser.context, `${base}/sessions/${id}`);
    await page.locator('#attach').setInputFiles({ name: 'bug.png', mimeType: 'image/png', buffer: solid([0, 200, 0]) });
    await page.locator('.chosen-images li').filter({ hasText: 'bug.png' }).waitFor();
    // Dropped on the box, as a person drags a file from their desktop.
    await page.evaluate(
      (data) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], 'dropped.png', { type: 'image/png' }));
        const drop = new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true });
        document.querySelector('.composer')?.dispatchEvent(drop);
      },
      solid([0, 0, 200]).toString('base64'),
    );
    await page.locator('.chosen-images li').filter({ hasText: 'dropped.png' }).waitFor();
    await page.locator('#name').fill('Grace');
    await page.locator('#message').fill('Here is what I see');
    await page.locator('#send').click();
    const thumbs = page.locator('.item-user .thumb img');
    await thumbs.nth(1).waitFor();
    expect(await thumbs.evaluateAll((all) => all.map((i) => i.getAttribute('alt')))).toEqual([
      'Grace: bug.png',
      'Grace: dropped.png',
    ]);
    expect(await page.locator('.chosen-images').count()).toBe(0);
    const kept = await createPgArtifactStore(fx.db).list(id);
    expect(kept.map((a) => a.name).sort()).toEqual(['bug.png', 'dropped.png']);
    expect(problems).toEqual([]);
  });
});
