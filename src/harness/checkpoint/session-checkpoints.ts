import type { Logger } from 'pino';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import type { RunLog } from '../../core/run-log.ts';
import type { StepCheckpoint } from '../../core/work-checkpoint.ts';
import type { ToolExecutor } from '../../agent/agent-runner.ts';
import type { CheckpointStore, WorkCheckpoint } from './checkpoint-store.ts';
import {
  chainOf,
  checkpointScratchDir,
  checkpointWork,
  readWorkState,
  restoreWork,
  type CheckpointChain,
} from './work-checkpoint.ts';

/** Tools that never change the workspace's files: no checkpoint after them. Any other tool gets one. */
const readOnlyTools = new Set(['read_file', 'list_files', 'search', 'git_status', 'git_diff', 'ask_user']);

export type WorkBase = { branch: string; baseBranch: string; baseCommit: string };

export type SessionCheckpoints = {
  /** The base the work is measured from: the checkpoint's when one was restored or matched. */
  base: WorkBase;
  /**
   * Wraps the tool executor. A call that may change files runs only once a checkpoint of the work
   * before it is stored (one is taken first when none is), and the checkpoint after it comes back
   * with its result (`ToolOutput.checkpoint`), to be stored together with it: a resumed run never
   * finds a call's work without its result. A call that started and has no result may run again
   * only when the workspace was put back to the checkpoint before it (`rerunsInterrupted`).
   */
  tools(executor: ToolExecutor): ToolExecutor;
  /** Checkpoints now (after the harness committed). */
  take(signal: AbortSignal): Promise<void>;
};

export type CheckpointDeps = {
  store: CheckpointStore;
  runLog: Pick<RunLog, 'get' | 'events'>;
  dataDir: string;
  /** Largest bundle stored; larger work is recorded as not checkpointable. */
  maxBytes: number;
  log: Logger;
};

/**
 * Makes the workspace hold the work the session's log says was done, before a run continues it,
 * then keeps checkpointing. A workspace is up to date when its state is the latest checkpoint's
 * (the usual case: the same worker again). Otherwise (a fresh workspace on another worker, or one
 * left behind while another worker went on) the checkpoint is restored into it. When work was done
 * and nothing can bring it back, the run fails saying so: going on would report "no changes".
 */
export async function resumeWork(input: {
  sessionId: string;
  sandbox: Sandbox;
  /** Host path of a local sandbox's workspace; remote sandboxes hand the bundle over as bytes. */
  workspaceDir?: string;
  /** False when the workspace was just made for this run. */
  reused: boolean;
  base: WorkBase;
  deps: CheckpointDeps;
  signal: AbortSignal;
}): Promise<SessionCheckpoints> {
  const { sessionId, sandbox, deps, signal } = input;
  const log = deps.log;
  const checkpoint = await deps.store.latest(sessionId);
  let base = input.base;
  let last: Pick<WorkCheckpoint, 'head' | 'tree'> | undefined;
  // The workspace holds the stored chain's last commit (it matched or was restored): checkpoints go on it.
  let chain: CheckpointChain | undefined;
  // The workspace is the latest checkpoint's (or no file-changing call ever ran: there is none),
  // so a call that started and has no result finds the workspace as it was before the call.
  let atCheckpoint = checkpoint === undefined;

  if (checkpoint?.bundle) {
    const state = await readWorkState(sandbox, signal);
    if (state.head === checkpoint.head && state.tree === checkpoint.tree) {
      log.debug('workspace matches the latest checkpoint');
    } else {
      log.info(
        { reused: input.reused, checkpointHead: checkpoint.head, workspaceHead: state.head },
        'restoring the work of an earlier run from its checkpoint',
      );
      await restoreWork(sandbox, checkpoint, signal);
    }
    last = { head: checkpoint.head, tree: checkpoint.tree };
    chain = chainOf(checkpoint);
    base = { branch: checkpoint.branch, baseBranch: checkpoint.baseBranch, baseCommit: checkpoint.baseCommit };
    atCheckpoint = true;
  } else if (!input.reused) {
    if (checkpoint?.unavailable)
      throw new PatchbayError(
        'git_failed',
        `the previous run's work cannot be restored on this worker: ${checkpoint.unavailable}`,
      );
    const unsaved = await unpushedWork(sessionId, deps.runLog);
    if (unsaved > 0) {
      throw new PatchbayError(
        'git_failed',
        `the previous run changed files (${unsaved} step${unsaved === 1 ? '' : 's'} since the last push) in a workspace this worker does not have, and no checkpoint of that work is stored; resuming would lose it`,
      );
    }
  } else if (checkpoint?.unavailable) {
    log.warn(
      { reason: checkpoint.unavailable },
      "the latest checkpoint could not be stored; going on with this worker's own workspace",
    );
  }

  const checkpointInto = async (store: CheckpointStore, signal: AbortSignal) => {
    const session = await deps.runLog.get(sessionId);
    const stored = await checkpointWork({
      sessionId,
      sandbox,
      ...(input.workspaceDir && { workspaceDir: input.workspaceDir }),
      scratchDir: checkpointScratchDir(deps.dataDir),
      store,
      base,
      step: session?.lastSeq ?? 0,
      ...(last && { last }),
      ...(chain && { chain }),
      maxBytes: deps.maxBytes,
      signal,
    });
    last = { head: stored.head, tree: stored.tree };
    chain = stored.chain;
  };
  const take = (signal: AbortSignal) => checkpointInto(deps.store, signal);
  /**
   * The checkpoint of the work now, not stored: the caller stores it with the step it follows
   * (commitStep), an increment only while the stored chain still ends at its parent. The chain is
   * taken to go on from it; if the step does not land, the run ends and the next one reads the chain.
   */
  const takeForStep = async (signal: AbortSignal): Promise<StepCheckpoint | undefined> => {
    let taken: StepCheckpoint | undefined;
    await checkpointInto(
      {
        latest: (id) => deps.store.latest(id),
        save: async (_id, checkpoint) => {
          taken = { kind: 'whole', checkpoint };
        },
        append: async (_id, checkpoint, increment) => {
          taken = { kind: 'increment', checkpoint, increment };
          return true;
        },
      },
      signal,
    );
    return taken;
  };

  return {
    base,
    take,
    tools: (executor) => ({
      specs: () => executor.specs(),
      async execute(call, ctx) {
        if (readOnlyTools.has(call.name)) return executor.execute(call, ctx);
        // The executor must not throw: a checkpoint cut short by a stop is an error result.
        const stopped = (error: unknown) => {
          if (!ctx.signal.aborted) throw error;
          return undefined;
        };
        // No checkpoint yet: store the work as it is, the state a resume puts back before a rerun.
        if (!last && (await take(ctx.signal).then(() => true, stopped)) === undefined)
          return { content: 'The call was stopped before it ran.', isError: true };
        const output = await executor.execute(call, ctx);
        if (ctx.signal.aborted) return output;
        const checkpoint = await takeForStep(ctx.signal).catch(stopped);
        return checkpoint ? { ...output, checkpoint } : output;
      },
      rerunsInterrupted: (call) => readOnlyTools.has(call.name) || atCheckpoint,
    }),
  };
}

/** Steps of tools that may change files, recorded after the session's last push. */
async function unpushedWork(sessionId: string, runLog: Pick<RunLog, 'events'>): Promise<number> {
  const events = await runLog.events(sessionId, { types: ['tool-end', 'branch-pushed'] });
  const lastPush = events.findLast((e) => e.event.type === 'branch-pushed')?.seq ?? 0;
  return events.filter((e) => e.seq > lastPush && e.event.type === 'tool-end' && !readOnlyTools.has(e.event.name))
    .length;
}
