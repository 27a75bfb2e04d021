import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RepoKnowledge } from '../../src/api/api-types.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { launchChromium, openPage, type Browser } from './chromium.ts';
import { createSessionOverApi } from '../helpers/server-process.ts';

const HOST = 'registry.blocked.example';

/** One refused request (the allowlist refuses it before any DNS: nothing leaves this machine), then done. */
function scenario(messages: readonly ModelMessage[]): ScriptedTurn {
  return messages.some((m) => m.role === 'tool')
    ? { text: 'The registry was refused.' }
    : { toolCalls: [{ name: 'run_shell', input: { command: `curl -sS http://${HOST}/x; true` } }] };
}

describe('blocked connections on the session page and the Repo tab, in Chromium', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;
  let browser: Browser;

  beforeAll(async () => {
    remote = await createRemote();
    app = await startTestPatchbay({
      serve: true,
      model: createScriptedProvider({ scenario }),
      env: { PATCHBAY_ALLOW_LOCAL_REPOS: 'true' },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.dispose();
    await remote?.cleanup();
  });

  it('"Allow for this repository" on the refused host lists it on the Repo tab; Revoke takes it off', {
    timeout: 120_000,
  }, async () => {
    const id = await createSessionOverApi(app, { repo: remote.remote, prompt: 'Install the deps' });
    await waitForStatus(app, id, ['completed'], 60_000);
    const { page, problems } = await openPage(browser.context, `${app.url}/sessions/${id}`);
    await page.evaluate(() => localStorage.setItem('patchbay.name', 'Ada'));
    await page.reload();

    const blocked = page.locator(`.egress[data-host="${HOST}"]`);
    await blocked.getByRole('button', { name: 'Allow for this repository' }).click();
    await blocked.getByText('Allowed for this repository.').waitFor();
    const allowed = await waitFor(
      async () => (await app.store.events(id, { types: ['egress-allowed'] })).map((e) => e.event)[0],
      'the allowance',
    );
    expect(allowed).toMatchObject({
      host: HOST,
      port: 80,
      scope: 'repository',
      surface: 'web',
      actor: { name: 'Ada' },
    });
    await page.locator('.note', { hasText: `Ada allowed network access to ${HOST}:80 for this repository` }).waitFor();

    await page.click('#tab-knowledge');
    const entry = page.locator(`#egress-allow li[data-host="${HOST}"]`);
    await entry.getByText('allowed by Ada from web').waitFor();
    await entry.getByRole('button', { name: `Revoke ${HOST}:80` }).click();
    await page.locator('#egress-allow', { hasText: 'None.' }).waitFor();
    const knowledge = (await (
      await fetch(`${app.url}/api/repos/${encodeURIComponent(remote.remote)}/knowledge`)
    ).json()) as RepoKnowledge;
    expect(knowledge.document.egressAllow).toEqual([]);
    const revoked = (await app.store.events(id, { types: ['egress-revoked'] })).map((e) => e.event);
    expect(revoked).toMatchObject([{ host: HOST, port: 80, actor: { name: 'Ada' }, surface: 'web' }]);
    expect(problems).toEqual([]);
  });
});
