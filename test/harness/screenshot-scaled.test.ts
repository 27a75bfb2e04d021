import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { decodePng } from '../agent/png-pixels.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const TALL_PAGE = `<!doctype html><html><body style="margin:0;background:#fff">
<div style="height:200px;background:#ff0000"></div>
<div style="height:5800px;background:repeating-linear-gradient(#336699 0 1px,#6699cc 1px 2px)"></div>
</body></html>`;

/**
 * The whole service as `patchbay serve` wires it: a full-page screenshot in the widest window the
 * tool allows (3840x4096) reaches the model scaled to 1568 px on its long side (under the 2000 px
 * Anthropic allows once a request carries more than 20 pictures), while the session keeps the
 * picture as taken.
 */
describe('an agent screenshot is scaled before it joins the transcript', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture | undefined;
  beforeAll(async () => {
    remote = await createRemote();
  });
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
  });

  it('a full page in a 3840x4096 window reaches the model at 1568 px tall, its proportions kept; the artifact keeps it as taken', async () => {
    const model = createScriptedProvider({
      scenario: [
        { toolCalls: [{ name: 'write_file', input: { path: 'site/index.html', content: TALL_PAGE } }] },
        {
          toolCalls: [
            {
              name: 'screenshot',
              input: {
                url: 'http://127.0.0.1:8152/',
                width: 3840,
                fullPage: true,
                server: 'cd site && exec python3 -m http.server 8152 --bind 127.0.0.1',
              },
            },
          ],
        },
        { text: 'The page is tall.' },
      ],
    });
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Look at the tall page',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const session = await waitForStatus(app, started.session.id, ['completed', 'failed'], 90_000);
    expect(session.status, session.error ?? '').toBe('completed');

    const kept = await createPgArtifactStore(app.database.db).list(started.session.id);
    // The stripes' last rows may render alike, and a full page loses its plain bottom rows (png-trim),
    // so the page's height (about 4,096) varies by a few rows from run to run.
    expect(kept).toMatchObject([{ kind: 'screenshot', mediaType: 'image/png', width: 3840 }]);
    expect(kept[0]?.height).toBeGreaterThan(4000);

    // The model's copy: 1568 px on its long side, the page's proportions kept (1470 wide at 4,096).
    const width = Math.round((3840 * 1568) / kept[0]!.height!);
    const seen = model.requests[2]?.messages.find((m) => m.role === 'tool' && m.name === 'screenshot');
    const image = seen?.role === 'tool' ? seen.images?.[0] : undefined;
    expect(image).toMatchObject({ width, height: 1568 });
    const pixels = decodePng(Buffer.from(image?.data ?? '', 'base64'));
    expect([pixels.width, pixels.height]).toEqual([width, 1568]);
    const [r, g, b] = pixels.at(700, 20);
    expect([r > 220, g < 40, b < 40]).toEqual([true, true, true]);
  }, 150_000);
});
