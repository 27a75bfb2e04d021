import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import type { FakeModal } from '../../fakes/modal/fake-modal.ts';
import { startModalBackend, startWebSession, type ModalBackend } from '../../helpers/modal-patchbay.ts';
import { counterApp, walkTheFlow } from '../../fixtures/counter-app.ts';
import { createRemote, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../../helpers/wait-for.ts';
import { pidsWithMarker } from '../sandbox-test-helpers.ts';

const PORT = 8177;
const URL = `http://127.0.0.1:${PORT}/`;

/**
 * SANDBOX=modal gets the same background processes and browser tools as the local sandbox: through
 * the real SDK against the loopback fake, the agent starts the dev server once, logs in, counts to
 * three and reads 3, takes a picture; the run's end leaves nothing running in the fake's container.
 */
describe('the browser tools on Modal', () => {
  let remote: RemoteFixture;
  let modal: ModalBackend;
  let fake: FakeModal;
  let app: PatchbayFixture;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('index.html', counterApp('user'), 'A login form and a counter');
    modal = await startModalBackend();
    fake = modal.fake;
    const server = `exec python3 -m http.server ${PORT} --bind 127.0.0.1`;
    const turns = [
      { toolCalls: [{ name: 'process_start', input: { command: server, port: PORT } }] },
      ...walkTheFlow(URL),
      { toolCalls: [{ name: 'process_list', input: {} }] },
      { text: 'Counted to three.' },
    ];
    const model = createScriptedProvider({
      scenario: (messages) => turns[messages.filter((m) => m.role === 'assistant').length] ?? { text: 'done' },
    });
    app = await modal.startPatchbay({ model, env: { MODAL_SANDBOX_TIMEOUT_MINUTES: '60' } });
  }, 90_000);
  afterAll(async () => {
    await app?.dispose();
    await modal?.close();
    await remote?.cleanup();
  });

  it('starts the server once, logs in, clicks three times, reads 3 and leaves nothing running', {
    timeout: 180_000,
  }, async () => {
    const id = await startWebSession(app, { text: 'Count to three on the counter page', repo: remote.remote });
    const done = await waitForStatus(app, id, ['completed', 'failed', 'cancelled'], 150_000);
    expect(done.error).toBeNull();
    const ends = (await app.store.events(id, { types: ['tool-end'] })).flatMap((e) =>
      e.event.type === 'tool-end' ? [e.event] : [],
    );
    expect(ends.filter((e) => e.isError).map((e) => `${e.name}: ${e.output}`)).toEqual([]);
    expect(ends.find((e) => e.name === 'process_start')?.output).toContain(`It answers on ${URL}`);
    expect(ends.find((e) => e.name === 'browser_snapshot')?.output).toContain('status "3"');
    expect(ends.find((e) => e.name === 'browser_screenshot')?.output).toContain('(1280x800), attached');
    expect(ends.find((e) => e.name === 'process_list')?.output).toMatch(/p1 running: exec python3 -m http\.server/);
    expect(ends.find((e) => e.name === 'process_list')?.output).toContain('Browser: open');
    const left = async () => [
      ...(await pidsWithMarker(`http.server ${PORT}`)),
      ...(await pidsWithMarker(`patchbay-browser-${id}`)),
    ];
    await waitFor(async () => ((await left()).length === 0 ? true : undefined), 'no server or browser left', 15_000);
    expect(fake.refusals).toEqual([]);
  });
});
