import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { decodePng } from '../agent/png-pixels.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const PAGE = `<!doctype html><html><body style="margin:0;background:#fff">
<button style="position:absolute;left:0;top:0;width:240px;height:90px;border:0;background:#ff0000">Save</button>
</body></html>`;

/** The whole service (queue, worker, harness, runner, real sandbox): the screenshot is kept with the session. */
describe('a session that takes a screenshot of the page it serves', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture | undefined;
  beforeAll(async () => {
    remote = await createRemote();
  });
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
  });

  it('shows the model the page and keeps the picture as a session artifact', async () => {
    const model = createScriptedProvider({
      scenario: [
        { toolCalls: [{ name: 'write_file', input: { path: 'site/index.html', content: PAGE } }] },
        {
          toolCalls: [
            {
              name: 'screenshot',
              input: {
                url: 'http://127.0.0.1:8151/',
                server: 'cd site && exec python3 -m http.server 8151 --bind 127.0.0.1',
              },
            },
          ],
        },
        { text: 'Added a red save button.' },
      ],
    });
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Add a red save button',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const session = await waitForStatus(app, started.session.id, ['completed', 'failed'], 90_000);
    expect(session.status, session.error ?? '').toBe('completed');

    const seen = model.requests[2]?.messages.find((m) => m.role === 'tool' && m.name === 'screenshot');
    const image = seen?.role === 'tool' ? seen.images?.[0] : undefined;
    expect(image).toMatchObject({ mediaType: 'image/png', width: 1280, height: 800 });
    const [r, g, b] = decodePng(Buffer.from(image?.data ?? '', 'base64')).at(20, 70);
    expect([r > 220, g < 40, b < 40]).toEqual([true, true, true]);

    const kept = await createPgArtifactStore(app.database.db).list(started.session.id);
    expect(kept).toMatchObject([{ kind: 'screenshot', mediaType: 'image/png', width: 1280, height: 800 }]);
    expect(seen?.content).toContain(kept[0]?.id);
  }, 120_000);
});
