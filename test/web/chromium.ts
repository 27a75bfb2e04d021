import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium; bootstrap.sh --test (which CI runs) installs it. Never downloaded by the tests. */
export const CHROMIUM = '/usr/bin/chromium';

const flags = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where the browser tests write screenshots of the pages (gitignored), for people to look at. */
export const screenshotDir = resolve(import.meta.dirname, '../../test-results/screenshots');

export type Browser = { context: BrowserContext; close(): Promise<void> };

/** Chromium with a fresh profile. Fails (never skips) when Chromium is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the browser tests need Debian's chromium (./bootstrap.sh --test installs it)`,
    );
  }
  await mkdir(screenshotDir, { recursive: true });
  const profile = await mkdtemp(join(tmpdir(), 'patchbay-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: flags,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** A page that records script errors and console errors (CSP violations included) in `problems`. */
export async function openPage(context: BrowserContext, url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(url);
  return { page, problems };
}
