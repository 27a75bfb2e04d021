import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import { createImageIntake, defaultIntakeLimits } from '../../src/sessions/inbound/image-intake.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { encodePng } from '../helpers/png-encode.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

const png = encodePng(32, 20, () => [0, 160, 0]).toString('base64');

/** Pictures sent with a message from the page: taken in as every surface's are, or the message is refused. */
describe('POST /api/sessions/:id/messages with pictures', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let bare: ApiServer;
  beforeAll(async () => {
    fx = await createApiFixture();
    const intake = createImageIntake({ artifacts: createPgArtifactStore(fx.db), limits: defaultIntakeLimits });
    app = fx.server({ imageIntake: intake });
    bare = fx.server();
  });
  afterAll(() => fx?.close());

  async function session() {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Fix the colour',
      repo: 'https://github.com/acme/widgets',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    return started.session.id;
  }
  const userMessages = async (id: string) =>
    (await fx.store.events(id)).flatMap((e) => (e.event.type === 'user-message' ? [e.event] : []));

  it('keeps the picture with the session and puts it on the message', async () => {
    const id = await session();
    const res = await app.inject({
      method: 'POST',
      url: `/api/sessions/${id}/messages`,
      payload: { text: 'See the picture', images: [{ name: 'bug.png', data: png }] },
    });
    expect(res.statusCode).toBe(202);
    const [, said] = await userMessages(id);
    expect(said?.attachments).toEqual([
      { artifactId: expect.any(String), mediaType: 'image/png', name: 'bug.png', byteSize: expect.any(Number) },
    ]);
    const kept = await createPgArtifactStore(fx.db).list(id);
    expect(kept.map((a) => [a.kind, a.name, a.id])).toEqual([
      ['attachment', 'bug.png', said!.attachments![0]!.artifactId],
    ]);
  });

  it('refuses a message whose file is not a picture, says why, and sends nothing', async () => {
    const id = await session();
    const fake = Buffer.from('%PDF-1.7 this is not a picture').toString('base64');
    const res = await app.inject({
      method: 'POST',
      url: `/api/sessions/${id}/messages`,
      payload: { text: 'See the picture', images: [{ name: 'bug.png', data: fake }] },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_input', message: expect.stringContaining('bug.png') });
    expect(await userMessages(id)).toHaveLength(1);
  });

  it('refuses pictures where no intake is configured', async () => {
    const id = await session();
    const res = await bare.inject({
      method: 'POST',
      url: `/api/sessions/${id}/messages`,
      payload: { text: 'See the picture', images: [{ name: 'bug.png', data: png }] },
    });
    expect(res.statusCode).toBe(400);
    expect(await userMessages(id)).toHaveLength(1);
  });
});
