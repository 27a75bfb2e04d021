import type { Actor } from '../../src/core/actor.ts';
import type { Patchbay } from '../../src/main.ts';
import type { FakeSandboxRecord, FakeModal } from '../fakes/modal/fake-modal.ts';
import { startFakeModalForSdk } from '../fakes/modal/fake-modal-sdk.ts';
import { changelogRequester } from '../harness/changelog-scenario.ts';
import { startTestPatchbay, type PatchbayFixture } from './patchbay-fixture.ts';
import { waitFor } from './wait-for.ts';

type PatchbayOptions = NonNullable<Parameters<typeof startTestPatchbay>[0]>;

/** The loopback fake Modal, the real `modal` SDK pointed at it, and whole Patchbays started on it. */
export type ModalBackend = Awaited<ReturnType<typeof startFakeModalForSdk>> & {
  /** A whole Patchbay on a fresh test database with SANDBOX=modal on this fake; `env` adds to (or overrides) Modal's settings. */
  startPatchbay(options?: PatchbayOptions): Promise<PatchbayFixture>;
};

/** One fake Modal per file: every Patchbay the file starts on it shares its sandboxes, images and clock. */
export async function startModalBackend(): Promise<ModalBackend> {
  const modal = await startFakeModalForSdk();
  return {
    ...modal,
    startPatchbay: (options = {}) => startTestPatchbay({ ...options, env: { ...modal.env(), ...options.env } }),
  };
}

/** Starts a session from the web page (as the changelog scenario's requester unless told) and gives its id. */
export async function startWebSession(
  app: Patchbay,
  request: { text: string; repo: string; actor?: Actor },
): Promise<string> {
  const started = await app.service.start({
    thread: { source: 'web' },
    actor: request.actor ?? changelogRequester,
    text: request.text,
    repo: request.repo,
  });
  if (started.kind !== 'started') throw new Error(started.kind);
  return started.session.id;
}

/** The session's Modal sandbox record; there must be one. */
export async function modalSandboxRecord(app: Patchbay, sessionId: string) {
  return app.database.db
    .selectFrom('modal_sandboxes')
    .selectAll()
    .where('session_id', '=', sessionId)
    .executeTakeFirstOrThrow();
}

/** The session's Modal sandbox record once the run has let go of the sandbox (a run releases it just after its status is written). */
export async function releasedModalSandbox(app: Patchbay, sessionId: string, what = 'the sandbox to be released') {
  return waitFor(async () => {
    const row = await app.database.db
      .selectFrom('modal_sandboxes')
      .selectAll()
      .where('session_id', '=', sessionId)
      .executeTakeFirst();
    return row?.released && row;
  }, what);
}

/** The fake's sandboxes Patchbay tagged with this session, oldest first. */
export function sessionSandboxes(fake: FakeModal, sessionId: string): FakeSandboxRecord[] {
  return [...fake.sandboxes.values()].filter((sb) =>
    sb.tags.some((t) => t.tagName === 'patchbay-session' && t.tagValue === sessionId),
  );
}
