import type { ModalSandboxLike } from './modal-client.ts';
import type { ModalRecordStore } from './modal-records.ts';

/**
 * A session's Modal sandbox as one run may use it: every call that acts on the sandbox (a
 * command, which is also how files move; a snapshot; an exit snapshot; terminate) first checks
 * that the run's lease epoch is still the session's, and is refused (`lease_lost`) once another
 * run took the session over. A worker that was paused past its lease and wakes up then cannot run
 * anything in, snapshot or end the sandbox that the run in its place now works in. Reads (poll,
 * tags) and detach stay as they are. Without an epoch (no lease, as for the CLI's one run) the
 * sandbox is returned unchanged.
 *
 * Modal knows nothing of epochs, so the check comes just before the call: a take-over that lands
 * between the two still lets that one call through. The run that took over waits out the lapsed
 * lease first, so that needs a pause of the old worker in exactly that gap.
 */
export function fenceModalSandbox(
  sandbox: ModalSandboxLike,
  fence: { store: ModalRecordStore; sessionId: string; epoch: number | undefined },
): ModalSandboxLike {
  const { store, sessionId, epoch } = fence;
  if (epoch === undefined) return sandbox;
  const check = () => store.assertEpoch(sessionId, epoch);
  return {
    get sandboxId() {
      return sandbox.sandboxId;
    },
    exec: async (command, params) => {
      await check();
      return sandbox.exec(command, params);
    },
    poll: () => sandbox.poll(),
    terminate: async () => {
      await check();
      return sandbox.terminate();
    },
    snapshotFilesystem: async (params) => {
      await check();
      return sandbox.snapshotFilesystem(params);
    },
    getTags: () => sandbox.getTags(),
    experimentalGetExitSnapshot: async (params) => {
      await check();
      return sandbox.experimentalGetExitSnapshot(params);
    },
    detach: () => sandbox.detach(),
  };
}
