import type { Logger } from 'pino';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import type { RunLog } from '../../core/run-log.ts';
import type { ToolExecutor } from '../../agent/agent-runner.ts';
import type { CheckpointStore, WorkCheckpoint } from './checkpoint-store.ts';
import { chainOf, checkpointScratchDir, checkpointWork, readWorkState, restoreWork, type CheckpointChain } from './work-checkpoint.ts';

/** Tools that never change the workspace's files: no checkpoint after them. Any other tool gets one. */
const readOnlyTools = new Set(['read_file', 'list_files', 'search', 'git_status', 'git_diff', 'ask_user']);

export type WorkBase = { branch: string; baseBranch: string; baseCommit: string };

export type SessionCheckpoints = {
  /** The base the work is measured from: the checkpoint's when one was restored or matched. */
  base: WorkBase;
  /** Wraps the tool executor: after a call that may have changed files, the work is checkpointed before the call's result is recorded. */
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

  if (checkpoint?.bundle) {
    const state = await readWorkState(sandbox, signal);
    if (state.head === checkpoint.head && state.tree === checkpoint.tree) {
      log.debug('workspace matches the latest checkpoint');
    } else {
      log.info({ reused: input.reused, checkpointHead: checkpoint.head, workspaceHead: state.head }, 'restoring the work of an earlier run from its checkpoint');
      await restoreWork(sandbox, checkpoint, signal);
    }
    last = { head: checkpoint.head, tree: checkpoint.tree };
    chain = chainOf(checkpoint);
    base = { branch: checkpoint.branch, baseBranch: checkpoint.baseBranch, baseCommit: checkpoint.baseCommit };
  } else if (!input.reused) {
    if (checkpoint?.unavailable) throw new PatchbayError('git_failed', `the previous run's work cannot be restored on this worker: ${checkpoint.unavailable}`);
    const unsaved = await unpushedWork(sessionId, deps.runLog);
    if (unsaved > 0) {
      throw new PatchbayError(
        'git_failed',
        `the previous run changed files (${unsaved} step${unsaved === 1 ? '' : 's'} since the last push) in a workspace this worker does not have, and no checkpoint of that work is stored; resuming would lose it`,
      );
    }
  } else if (checkpoint?.unavailable) {
    log.warn({ reason: checkpoint.unavailable }, 'the latest checkpoint could not be stored; going on with this worker\'s own workspace');
  }

  const take = async (signal: AbortSignal) => {
    const session = await deps.runLog.get(sessionId);
    const stored = await checkpointWork({
      sessionId,
      sandbox,
      ...(input.workspaceDir && { workspaceDir: input.workspaceDir }),
      scratchDir: checkpointScratchDir(deps.dataDir),
      store: deps.store,
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

  return {
    base,
    take,
    tools: (executor) => ({
      specs: () => executor.specs(),
      async execute(call, ctx) {
        const output = await executor.execute(call, ctx);
        if (readOnlyTools.has(call.name) || ctx.signal.aborted) return output;
        await take(ctx.signal);
        return output;
      },
    }),
  };
}

/** Steps of tools that may change files, recorded after the session's last push. */
async function unpushedWork(sessionId: string, runLog: Pick<RunLog, 'events'>): Promise<number> {
  const events = await runLog.events(sessionId, { types: ['tool-end', 'branch-pushed'] });
  const lastPush = events.findLast((e) => e.event.type === 'branch-pushed')?.seq ?? 0;
  return events.filter((e) => e.seq > lastPush && e.event.type === 'tool-end' && !readOnlyTools.has(e.event.name)).length;
}
