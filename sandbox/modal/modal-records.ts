/**
 * Where the Modal provider keeps what a session's sandbox is, so any worker (on any host) can
 * reattach to it or restore it: the live sandbox's id and the newest filesystem snapshot. The
 * database implementation lives in src/sessions (table `modal_sandboxes`, migration 011).
 */
export type ModalSessionRecord = {
  /** The live sandbox (`sb-…`), or null when it was terminated or lost. */
  sandboxId: string | null;
  /** The newest filesystem snapshot of the session's sandbox (`im-…`). */
  imageId: string | null;
  snapshotAt: Date | null;
  /** When the live sandbox reaches Modal's time limit. */
  expiresAt: Date | null;
  /** Last time a run used the sandbox. */
  usedAt: Date;
  /** True when the last run let go of the sandbox cleanly (and snapshotted it first). */
  released: boolean;
};

/**
 * Records are kept per sandbox, by the id it was acquired under (called `sessionId` below): a
 * session's own, or its checks' sandbox (`<session>-checks`, src/core/checks-sandbox.ts). Both are
 * the owning session's: a run's `epoch` is checked against that session's run epoch.
 */
export interface ModalRecordStore {
  get(sessionId: string): Promise<ModalSessionRecord | undefined>;
  /**
   * Creates the record or updates the given fields. Must not throw for a session that exists,
   * except with `epoch` (the writing run's lease epoch, SandboxSpec.epoch): then the write lands
   * only while that epoch is the session's, and is refused (code `lease_lost`) once another run
   * took the session over, so a run that lost its lease cannot record or release the sandbox.
   */
  save(sessionId: string, patch: Partial<ModalSessionRecord>, epoch?: number): Promise<void>;
  /** Resolves while `epoch` is the session's run epoch; refused (code `lease_lost`) once another run took the session over. */
  assertEpoch(sessionId: string, epoch: number): Promise<void>;
  /** Every record that names a live sandbox, by sandbox id, with the id it was acquired under (for the reaper). */
  bySandbox(): Promise<Map<string, { sessionId: string } & ModalSessionRecord>>;
  /** The newest setup image of a repository (its sandbox right after setup), when there is one. */
  getTemplate(repo: string): Promise<{ imageId: string; baseCommit: string } | undefined>;
  saveTemplate(repo: string, template: { imageId: string; baseCommit: string }): Promise<void>;
  /** Every repository's setup image. */
  listTemplates(): Promise<{ repo: string; imageId: string; baseCommit: string }[]>;
  /**
   * Records `template` as the repository's setup image only while its image is still `fromImageId`
   * (a session that saved a newer one meanwhile wins). True when it was recorded.
   */
  replaceTemplate(
    repo: string,
    fromImageId: string,
    template: { imageId: string; baseCommit: string },
  ): Promise<boolean>;
}
