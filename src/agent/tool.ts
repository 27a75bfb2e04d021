import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { ArtifactStore } from '../core/artifact-store.ts';
import type { SubtaskSpec } from '../core/subtasks.ts';
import type { ModelImage, ModelMessage, ToolCall } from '../core/transcript.ts';
import type { StepCheckpoint } from '../core/work-checkpoint.ts';
import type { ApprovalRules, RiskFinding } from './risk-classifier.ts';

/** What a tool may touch. Tools act only through the sandbox. */
export type ToolContext = {
  sandbox: Sandbox;
  sessionId: string;
  signal: AbortSignal;
  log: Logger;
  /**
   * The most characters of content the run hands the model from one call. The registry cuts
   * anything longer, once (capText); tools that cut with more care (per output stream) stay within it.
   */
  maxOutputChars?: number;
  /** Where pictures a tool takes are kept with the session (the screenshot tool); absent: not kept. */
  artifacts?: ArtifactStore | undefined;
  /**
   * Present when people can approve risky commands in this session: the rules layered
   * over the defaults (installation, then repository), and the command a person approved for the
   * call being run now, which then runs once without being held again. `holds: false` (autonomy
   * `full`): nothing is held; what the rules refuse stays refused and the policy's refusals apply.
   */
  approvals?: { rules: ApprovalRules[]; approvedCommand?: string | undefined; holds?: boolean } | undefined;
};

/** A tool's request to start sub-tasks (spawn_subtasks): the runner creates the children and waits. */
export type SpawnControl = { kind: 'spawn'; tasks: SubtaskSpec[] };

/** A tool's request to hold its call until a person approves `command` (the shell tool's risky commands). */
export type ApprovalControl = { kind: 'approval'; command: string; findings: RiskFinding[] };

/**
 * A tool's answer to the model. `control` lets a tool change the run's course: ask_user moves the
 * session to waiting with the question, and the eventual answer becomes this call's result.
 */
export type ToolOutput = {
  content: string;
  isError?: boolean;
  /** How the model can see the rest when the content is too long and the registry cuts it. */
  cutHint?: string;
  control?:
    | { kind: 'ask'; question: string; choices?: string[]; recommended?: string }
    | ApprovalControl
    | SpawnControl;
  /** The work after the call, checkpointed by the harness: the runner stores it with the call's result. */
  checkpoint?: StepCheckpoint;
  /** Pictures for the model to look at with the result (a screenshot), already checked. */
  images?: ModelImage[];
};

/** The transcript's message for one call's result: its text, whether it failed, and its pictures. */
export function toolResultMessage(call: ToolCall, output: ToolOutput): ModelMessage {
  return {
    role: 'tool',
    toolCallId: call.id,
    name: call.name,
    content: output.content,
    isError: output.isError ?? false,
    ...(output.images?.length && { images: output.images }),
  };
}

export type Tool<Input = unknown> = {
  name: string;
  description: string;
  inputSchema: z.ZodType<Input>;
  /**
   * How long one call may take before the registry abandons it with an error result, when the
   * registry's own limit does not fit (a shell command's limit follows its requested timeout).
   */
  timeLimitMs?(input: Input): number;
  /** May throw; the registry turns a throw into an error result the model sees. */
  execute(input: Input, ctx: ToolContext): Promise<ToolOutput>;
};

// Tools of different input types live in one list (a tool's input type is erased there; each tool parses its own input).
// biome-ignore lint/suspicious/noExplicitAny: Tool<unknown> would make every concrete tool unassignable (input is contravariant).
export type AnyTool = Tool<any>;
