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
} from './checkpoint-work.ts';

/** Tools that never change the workspace's files: no checkpoint after them. Any other tool gets one. */
const readOnlyTools = new Set([
  'read_file',
  'list_files',
  'search',
  'git_status',
  'git_diff',
  'ask_user',
  'spawn_subtasks',
  // They read the browser or a background process; clicks and typing may make the app write files.
  'browser_snapshot',
  'browser_console',
  'browser_screenshot',
  'process_output',
  'process_list',
]);

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

type ResumeInput = {
  sessionId: string;
  sandbox: Sandbox;
  /** Host path of a local sandbox's workspace; remote sandboxes hand the bundle over as bytes. */
  workspaceDir?: string;
  /** False when the workspace was just made for this run. */
  reused: boolean;
  base: WorkBase;
  deps: CheckpointDeps;
  signal: AbortSignal;
};

/** Where the run's checkpoints stand: what the next one is measured from and goes on. */
type CheckpointState = {
  input: ResumeInput;
  base: WorkBase;
  last: Pick<WorkCheckpoint, 'head' | 'tree'> | undefined;
  /** The workspace holds the stored chain's last commit (it matched or was restored): checkpoints go on it. */
  chain: CheckpointChain | undefined;
  /**
   * The workspace is the latest checkpoint's (or no file-changing call ever ran: there is none),
   * so a call that started and has no result finds the workspace as it was before the call.
   */
  atCheckpoint: boolean;
};

/**
 * Makes the workspace hold the work the session's log says was done, before a run continues it,
 * then keeps checkpointing. A workspace is up to date when its state is the latest checkpoint's
 * (the usual case: the same worker again). Otherwise (a fresh workspace on another worker, or one
 * left behind while another worker went on) the checkpoint is restored into it. When work was done
 * and nothing can bring it back, the run fails saying so: going on would report "no changes".
 */
export async function resumeWork(input: ResumeInput): Promise<SessionCheckpoints> {
  const state = await bringBackWork(input);
  const take = (signal: AbortSignal) => checkpointInto(state, input.deps.store, signal);
  return { base: state.base, take, tools: (executor) => checkpointingTools(state, executor) };
}

/** Restores (or matches) the latest checkpoint; fails when work was done that nothing can bring back. */
async function bringBackWork(input: ResumeInput): Promise<CheckpointState> {
  const { sessionId, sandbox, deps, signal } = input;
  const log = deps.log;
  const checkpoint = await deps.store.latest(sessionId);
  const state: CheckpointState = {
    input,
    base: input.base,
    last: undefined,
    chain: undefined,
    atCheckpoint: checkpoint === undefined,
  };
  if (checkpoint?.bundle) {
    const work = await readWorkState(sandbox, signal);
    if (work.head === checkpoint.head && work.tree === checkpoint.tree) {
      log.debug('workspace matches the latest checkpoint');
    } else {
      log.info(
        { reused: input.reused, checkpointHead: checkpoint.head, workspaceHead: work.head },
        'restoring the work of an earlier run from its checkpoint',
      );
      await restoreWork(sandbox, checkpoint, signal);
    }
    state.last = { head: checkpoint.head, tree: checkpoint.tree };
    state.chain = chainOf(checkpoint);
    state.base = { branch: checkpoint.branch, baseBranch: checkpoint.baseBranch, baseCommit: checkpoint.baseCommit };
    state.atCheckpoint = true;
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
  return state;
}

/** Checkpoints the work now into `store`, on the chain the state goes on. */
async function checkpointInto(state: CheckpointState, store: CheckpointStore, signal: AbortSignal): Promise<void> {
  const { sessionId, sandbox, workspaceDir, deps } = state.input;
  const session = await deps.runLog.get(sessionId);
  const stored = await checkpointWork({
    sessionId,
    sandbox,
    ...(workspaceDir && { workspaceDir }),
    scratchDir: checkpointScratchDir(deps.dataDir),
    store,
    base: state.base,
    step: session?.lastSeq ?? 0,
    ...(state.last && { last: state.last }),
    ...(state.chain && { chain: state.chain }),
    maxBytes: deps.maxBytes,
    signal,
  });
  state.last = { head: stored.head, tree: stored.tree };
  state.chain = stored.chain;
}

/**
 * The checkpoint of the work now, not stored: the caller stores it with the step it follows
 * (commitStep), an increment only while the stored chain still ends at its parent. The chain is
 * taken to go on from it; if the step does not land, the run ends and the next one reads the chain.
 */
async function takeForStep(state: CheckpointState, signal: AbortSignal): Promise<StepCheckpoint | undefined> {
  const { store } = state.input.deps;
  let taken: StepCheckpoint | undefined;
  await checkpointInto(
    state,
    {
      latest: (id) => store.latest(id),
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
}

/** See SessionCheckpoints.tools. */
function checkpointingTools(state: CheckpointState, executor: ToolExecutor): ToolExecutor {
  return {
    specs: () => executor.specs(),
    async execute(call, ctx) {
      if (readOnlyTools.has(call.name)) return executor.execute(call, ctx);
      // The executor must not throw: a checkpoint cut short by a stop is an error result.
      const stopped = (error: unknown) => {
        if (!ctx.signal.aborted) throw error;
        return undefined;
      };
      // No checkpoint yet: store the work as it is, the state a resume puts back before a rerun.
      if (
        !state.last &&
        (await checkpointInto(state, state.input.deps.store, ctx.signal).then(() => true, stopped)) === undefined
      )
        return { content: 'The call was stopped before it ran.', isError: true };
      const output = await executor.execute(call, ctx);
      if (ctx.signal.aborted) return output;
      const checkpoint = await takeForStep(state, ctx.signal).catch(stopped);
      return checkpoint ? { ...output, checkpoint } : output;
    },
    rerunsInterrupted: (call) => readOnlyTools.has(call.name) || state.atCheckpoint,
  };
}

/** Steps of tools that may change files, recorded after the session's last push. */
async function unpushedWork(sessionId: string, runLog: Pick<RunLog, 'events'>): Promise<number> {
  const events = await runLog.events(sessionId, { types: ['tool-end', 'branch-pushed'] });
  const lastPush = events.findLast((e) => e.event.type === 'branch-pushed')?.seq ?? 0;
  return events.filter((e) => e.seq > lastPush && e.event.type === 'tool-end' && !readOnlyTools.has(e.event.name))
    .length;
}
