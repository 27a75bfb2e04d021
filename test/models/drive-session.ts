import type {
  ModelMessage,
  ModelProvider,
  ToolCall,
  ToolSpec,
  TurnResult,
  Usage,
} from '../../src/models/model-provider.ts';
import { zeroUsage } from '../../src/models/model-provider.ts';
import { addUsage } from '../../src/models/model-catalog.ts';

/**
 * A minimal agent loop for provider tests and the bench: the real AgentRunner lives in src/agent.
 * It sends the transcript, executes tool calls with a caller-supplied fake, appends results.
 */
export type DriveOptions = {
  system: string;
  prompt: string;
  tools: ToolSpec[];
  execute: (call: ToolCall) => { content: string; isError?: boolean };
  maxTurns?: number;
  maxTokens?: number;
  /** Applied to each tool result before it joins the transcript. */
  transformResult?: (content: string) => string;
  /** Called before each turn; may rewrite the transcript (compaction). */
  beforeTurn?: (messages: ModelMessage[]) => Promise<ModelMessage[]>;
};

export type DriveResult = {
  calls: Array<{ name: string; input: unknown }>;
  finalText?: string | undefined;
  turns: TurnResult[];
  usage: Usage;
  messages: ModelMessage[];
};

export async function driveSession(provider: ModelProvider, options: DriveOptions): Promise<DriveResult> {
  let messages: ModelMessage[] = [{ role: 'user', content: options.prompt }];
  const calls: DriveResult['calls'] = [];
  const turns: TurnResult[] = [];
  let usage: Usage = { ...zeroUsage };
  for (let i = 0; i < (options.maxTurns ?? 20); i++) {
    if (options.beforeTurn) messages = await options.beforeTurn(messages);
    const result = await provider.runTurn({
      system: options.system,
      messages,
      tools: options.tools,
      maxTokens: options.maxTokens ?? 2048,
      signal: AbortSignal.timeout(10_000),
    });
    turns.push(result);
    usage = addUsage(usage, result.usage);
    if (result.stopReason === 'error')
      throw new Error(`turn ${i} failed: ${result.error?.code} ${result.error?.message}`);
    messages.push({
      role: 'assistant',
      content: result.content,
      toolCalls: result.toolCalls,
      providerState: result.providerState,
    });
    if (result.stopReason !== 'tool_use') return { calls, finalText: result.content, turns, usage, messages };
    for (const call of result.toolCalls) {
      calls.push({ name: call.name, input: call.input });
      const out = options.execute(call);
      const content = options.transformResult ? options.transformResult(out.content) : out.content;
      messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content, isError: out.isError ?? false });
    }
  }
  return { calls, turns, usage, messages };
}
