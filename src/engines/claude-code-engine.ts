import { type ClaudeStreamState, translateClaudeLine } from './claude-stream.ts';
import type { Engine, EngineResume, EngineRunInput } from './engine.ts';
import { type CliEngineSpec, type CliInvocation, cliVersion, engineInstructions, runCliEngine } from './engine-cli.ts';
import { CLAUDE_MANAGED_DIR } from './engine-hooks.ts';
import { engineAskGuidance } from './engine-transcript.ts';

/** Variables that keep the CLI offline but for its model calls (no telemetry, update checks or error reports). */
export const claudeOfflineEnv: Record<string, string> = {
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_BUG_COMMAND: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  // The sandbox is the boundary: the CLI runs without its own permission prompts (nobody could answer them).
  IS_SANDBOX: '1',
};

/** The Claude Code engine: `claude -p --output-format stream-json` in the session's sandbox, its model traffic through the relay. */
export function createClaudeCodeEngine(options: { cliPath: string }): Engine {
  const spec = claudeSpec(options.cliPath);
  return {
    name: 'claude-code',
    api: 'anthropic',
    run: (input) => runCliEngine(spec, input),
    version: (sandbox, signal) => cliVersion('claude', options.cliPath, sandbox, signal, claudeOfflineEnv),
  };
}

function claudeSpec(cliPath: string): CliEngineSpec {
  return {
    engine: 'claude-code',
    label: 'Claude Code',
    prepare: async (input, prompt, resume) => claudeInvocation(cliPath, input, prompt, resume),
    reader: (_input, firstTurn) => {
      const state: ClaudeStreamState = { turn: firstTurn, tools: new Map(), now: Date.now };
      // Its stream counts the model's turns: live text belongs to the turn under way.
      return { line: (line) => [translateClaudeLine(line, state)], end: () => undefined, turn: () => state.turn - 1 };
    },
    lostSession: (output) => /no conversation found/i.test(output),
  };
}

/**
 * The shell command that writes Patchbay's instructions (and the repository's knowledge) to a file
 * Claude Code appends to its own system prompt (its CLAUDE.md stays as it is) and runs it, the
 * prompt on stdin. The instructions go in through a file, so no argv (the host's process list)
 * holds them. Claude Code keeps its sessions (for --resume) in the workspace's .git, so they last as
 * long as the workspace, travel with its checkpoints, and are never committed.
 */
function claudeInvocation(
  cliPath: string,
  input: EngineRunInput,
  prompt: string,
  resume: EngineResume | undefined,
): CliInvocation {
  const { relay, sandbox } = input;
  const command = [
    // Without its managed settings nothing would gate its commands: it does not start.
    `test -r ${CLAUDE_MANAGED_DIR}/managed-settings.json || { echo "Patchbay's gate for Claude Code is missing (${CLAUDE_MANAGED_DIR} is not bound)" >&2; exit 3; };`,
    `mkdir -p "$CLAUDE_CONFIG_DIR" && printf '%s' "$PATCHBAY_ENGINE_SYSTEM" > "$CLAUDE_CONFIG_DIR/patchbay-system.md"`,
    `&& unset PATCHBAY_ENGINE_SYSTEM && exec "$PATCHBAY_CLAUDE" -p --output-format stream-json --verbose`,
    `--model "$PATCHBAY_ENGINE_MODEL" --dangerously-skip-permissions --append-system-prompt-file "$CLAUDE_CONFIG_DIR/patchbay-system.md"`,
    resume ? `--resume "$PATCHBAY_ENGINE_RESUME"` : '',
  ].join(' ');
  const env = {
    ...claudeOfflineEnv,
    PATCHBAY_CLAUDE: cliPath,
    PATCHBAY_ENGINE_MODEL: relay.model,
    PATCHBAY_ENGINE_SYSTEM: engineInstructions(input, engineAskGuidance),
    ...(resume && { PATCHBAY_ENGINE_RESUME: resume.engineSessionId }),
    ANTHROPIC_BASE_URL: relay.baseUrl,
    ANTHROPIC_API_KEY: relay.token,
    CLAUDE_CONFIG_DIR: `${sandbox.workdir}/.git/patchbay-engines/claude`,
  };
  return { command, env, stdin: prompt };
}
