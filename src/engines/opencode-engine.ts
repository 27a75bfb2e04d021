import type { Engine, EngineResume, EngineRunInput, RelayApi } from './engine.ts';
import {
  type CliEngineSpec,
  type CliInvocation,
  cliVersion,
  engineInstructions,
  engineStateDir,
  runCliEngine,
} from './engine-cli.ts';
import { engineAskGuidance } from './engine-transcript.ts';
import { type OpencodeStreamState, opencodeResult, translateOpencodeLine } from './opencode-stream.ts';

/**
 * Variables that keep OpenCode offline but for its model calls: no update check, no model list
 * from models.dev, no sharing, no plugins or language servers fetched, no skills or Claude Code
 * files read from outside the workspace.
 */
export const opencodeOfflineEnv: Record<string, string> = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
  OPENCODE_DISABLE_CLAUDE_CODE: '1',
  OPENCODE_PURE: '1',
};

/**
 * The provider OpenCode uses, pointed at the relay: its built-in `openai` (Responses API) or
 * `anthropic` provider with the relay as base URL and the run's token as key. Given as
 * OPENCODE_CONFIG_CONTENT, which OpenCode applies over every config file, so the repository's own
 * opencode.json stays as it is and cannot point the engine elsewhere. Pure.
 */
export function opencodeConfig(
  api: RelayApi,
  relay: { baseUrl: string; model: string },
  instructionsPath: string,
): string {
  const provider = api === 'openai' ? 'openai' : 'anthropic';
  return JSON.stringify({
    $schema: 'https://opencode.ai/config.json',
    model: `${provider}/${relay.model}`,
    small_model: `${provider}/${relay.model}`,
    provider: { [provider]: { options: { baseURL: `${relay.baseUrl}/v1`, apiKey: '{env:PATCHBAY_RELAY_TOKEN}' } } },
    instructions: [instructionsPath],
    autoupdate: false,
    share: 'disabled',
    // The sandbox is the boundary: nobody could answer OpenCode's permission prompts in a headless run.
    permission: { edit: 'allow', bash: 'allow', webfetch: 'allow', external_directory: 'allow' },
  });
}

/**
 * The OpenCode engine: `opencode run --format json` in the session's sandbox, resumed with
 * `--session <id>` for every later message (critique, answer). `api` is the wire format its model
 * traffic speaks through the relay (OpenAI's Responses API or Anthropic's Messages API).
 */
export function createOpencodeEngine(options: { cliPath: string; api: RelayApi }): Engine {
  const spec = opencodeSpec(options.cliPath, options.api);
  return {
    name: 'opencode',
    api: options.api,
    run: (input) => runCliEngine(spec, input),
    version: (sandbox, signal) =>
      cliVersion('opencode', options.cliPath, sandbox, signal, {
        ...opencodeOfflineEnv,
        ...xdgDirs(engineStateDir(sandbox.workdir, 'opencode')),
      }),
  };
}

function opencodeSpec(cliPath: string, api: RelayApi): CliEngineSpec {
  return {
    engine: 'opencode',
    label: 'OpenCode',
    prepare: async (input, prompt, resume) => opencodeInvocation(cliPath, api, input, prompt, resume),
    reader: (input, firstTurn) => {
      const state: OpencodeStreamState = {
        turn: firstTurn,
        workdir: input.sandbox.workdir,
        sessionId: undefined,
        lastText: '',
        error: undefined,
      };
      return { line: (line) => translateOpencodeLine(line, state), end: (exit) => opencodeResult(state, exit) };
    },
    lostSession: (output) => /session not found/i.test(output),
  };
}

/** OpenCode's data, config, cache and state under the engine's directory in the workspace's .git (its sessions last with the workspace). */
function xdgDirs(home: string): Record<string, string> {
  return {
    XDG_DATA_HOME: `${home}/data`,
    XDG_CONFIG_HOME: `${home}/config`,
    XDG_CACHE_HOME: `${home}/cache`,
    XDG_STATE_HOME: `${home}/state`,
  };
}

/** The shell command that writes Patchbay's instructions where the config names them and runs OpenCode, the prompt on stdin. */
export function opencodeInvocation(
  cliPath: string,
  api: RelayApi,
  input: EngineRunInput,
  prompt: string,
  resume: EngineResume | undefined,
): CliInvocation {
  const home = engineStateDir(input.sandbox.workdir, 'opencode');
  const instructions = `${home}/patchbay-instructions.md`;
  const command = [
    `mkdir -p "$PATCHBAY_ENGINE_HOME" && printf '%s\\n' "$PATCHBAY_ENGINE_INSTRUCTIONS" > "$PATCHBAY_ENGINE_HOME/patchbay-instructions.md" &&`,
    'unset PATCHBAY_ENGINE_INSTRUCTIONS &&',
    `exec "$PATCHBAY_OPENCODE" run --format json --title "Patchbay session"`,
    resume ? `--session "$PATCHBAY_ENGINE_RESUME"` : '',
  ].join(' ');
  return {
    command,
    env: {
      ...opencodeOfflineEnv,
      ...xdgDirs(home),
      PATCHBAY_OPENCODE: cliPath,
      PATCHBAY_ENGINE_HOME: home,
      PATCHBAY_ENGINE_INSTRUCTIONS: engineInstructions(input, engineAskGuidance),
      PATCHBAY_RELAY_TOKEN: input.relay.token,
      OPENCODE_CONFIG_CONTENT: opencodeConfig(api, input.relay, instructions),
      ...(resume && { PATCHBAY_ENGINE_RESUME: resume.engineSessionId }),
    },
    stdin: prompt,
  };
}
