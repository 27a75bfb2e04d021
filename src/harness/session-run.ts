import type { Logger } from 'pino';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { SessionRecord } from '../core/session-record.ts';
import type { SessionCheckpoints } from './checkpoint/session-checkpoints.ts';
import type { HarnessDeps } from './run-session.ts';

/** `workspaceDir` is the host path of a local sandbox's workspace; remote sandboxes have none. */
export type Workspace = {
  branch: string;
  baseBranch: string;
  baseCommit: string;
  workspaceDir?: string;
  reused: boolean;
};

/** One run of a session once its workspace is ready: what the phases after that work on. */
export type SessionRun = {
  session: SessionRecord;
  deps: HarnessDeps;
  sandbox: Sandbox;
  workspace: Workspace;
  checkpoints: SessionCheckpoints | undefined;
  signal: AbortSignal;
  log: Logger;
};
