import { afterAll, beforeAll } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import { createApiFixture, type ApiFixture } from '../api/api-fixture.ts';
import { launchChromium, type Browser } from './chromium.ts';

/** The API on a fresh database, its address, and a Chromium to open its pages in. */
export type PageFixture = { fx: ApiFixture; app: ApiServer; base: string; browser: Browser };

/**
 * Registers, in the calling `describe`, the set-up every page test shares: the API's real pieces
 * (createApiFixture) served on a loopback port, and Chromium; both closed after the block. Read the
 * returned object's fields inside the tests (they are set once `beforeAll` has run).
 */
export function usePageFixture(): PageFixture {
  const fixture = {} as PageFixture;
  beforeAll(async () => {
    fixture.fx = await createApiFixture();
    fixture.app = fixture.fx.server();
    fixture.base = await fixture.app.listen({ host: '127.0.0.1', port: 0 });
    fixture.browser = await launchChromium();
  });
  afterAll(async () => {
    await fixture.browser?.close();
    await fixture.fx?.close();
  });
  return fixture;
}
