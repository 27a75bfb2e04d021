import { sql } from 'kysely';
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
  const sendPicture = (id: string) =>
    app.inject({
      method: 'POST',
      url: `/api/sessions/${id}/messages`,
      payload: { text: 'See the picture', images: [{ name: 'bug.png', data: png }] },
    });
  const userMessages = async (id: string) =>
    (await fx.store.events(id)).flatMap((e) => (e.event.type === 'user-message' ? [e.event] : []));

  it('keeps the picture with the session and puts it on the message', async () => {
    const id = await session();
    expect((await sendPicture(id)).statusCode).toBe(202);
    const [, said] = await userMessages(id);
    expect(said?.attachments).toEqual([
      { artifactId: expect.any(String), mediaType: 'image/png', name: 'bug.png', byteSize: expect.any(Number) },
    ]);
    const kept = await createPgArtifactStore(fx.db).list(id);
    expect(kept.map((a) => [a.kind, a.name, a.id])).toEqual([
      ['attachment', 'bug.png', said!.attachments![0]!.artifactId],
    ]);
  });

  it('gives the pictures their session before it records the message that shows them', async () => {
    // The page draws a message as soon as it is recorded and asks for its pictures at once, from a
    // route that serves only the session's own: a trigger in the transaction that records the
    // message notes whose each picture is at that moment.
    await sql`create table if not exists picture_owner_seen (artifact_id text, session_id text)`.execute(fx.db);
    await sql`create or replace function note_picture_owner() returns trigger language plpgsql as $$
      begin
        insert into picture_owner_seen
          select a->>'artifactId', (select session_id from session_artifacts where id = a->>'artifactId')
          from jsonb_array_elements(coalesce(new.data->'attachments', '[]'::jsonb)) a;
        return new;
      end $$`.execute(fx.db);
    await sql`create or replace trigger note_picture_owner after insert on session_events
      for each row execute function note_picture_owner()`.execute(fx.db);
    const id = await session();
    expect((await sendPicture(id)).statusCode).toBe(202);
    const [, said] = await userMessages(id);
    const seen = await sql<{ artifact_id: string; session_id: string | null }>`
      select artifact_id, session_id from picture_owner_seen where artifact_id = ${said!.attachments![0]!.artifactId}`.execute(
      fx.db,
    );
    expect(seen.rows).toEqual([{ artifact_id: said!.attachments![0]!.artifactId, session_id: id }]);
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
