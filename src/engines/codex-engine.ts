import { randomBytes } from 'node:crypto';
import { type CodexStreamState, translateCodexLine } from './codex-stream.ts';
import type { Engine, EngineResume, EngineRunInput } from './engine.ts';
import {
  type CliEngineSpec,
  type CliInvocation,
  cliVersion,
  engineInstructions,
  engineStateDir,
  runCliEngine,
} from './engine-cli.ts';
import { CODEX_MANAGED_DIR } from './engine-hooks.ts';
import { engineAskGuidance } from './engine-transcript.ts';

/** The provider id Codex is pointed at: the relay, speaking the Responses API, with the run's token as its key. */
const PROVIDER = 'patchbay';

/**
 * `-c` overrides that keep Codex offline but for its model calls and make it headless: the relay as
 * its only provider, no web search (its traffic would bypass nothing, but it is not Patchbay's to
 * allow), no update check, no analytics. Each value is TOML.
 */
function codexConfig(baseUrl: string): string[] {
  const provider = `{ name = "Patchbay relay", base_url = ${tomlString(`${baseUrl}/v1`)}, env_key = "PATCHBAY_RELAY_TOKEN", wire_api = "responses" }`;
  return [
    `model_provider=${PROVIDER}`,
    `model_providers.${PROVIDER}=${provider}`,
    'web_search="disabled"',
    'check_for_update_on_startup=false',
    'analytics.enabled=false',
    'feedback.enabled=false',
  ];
}

/** Doctor's one-shot `codex exec` through a relay at `baseUrl`, in `dir` (the prompt follows). Pure. */
export function codexDoctorArgs(baseUrl: string, model: string, dir: string): string[] {
  return [
    'exec',
    '--json',
    '--skip-git-repo-check',
    '--dangerously-bypass-approvals-and-sandbox',
    '--color',
    'never',
    '-C',
    dir,
    '-m',
    model,
    ...codexConfig(baseUrl).flatMap((value) => ['-c', value]),
  ];
}

/** A TOML basic string. Pure. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * The Codex engine: `codex exec --json` in the session's sandbox, resumed with `codex exec resume
 * <thread>` for every later message (critique, answer). Patchbay's instructions go to
 * `$CODEX_HOME/AGENTS.md`, which Codex reads besides the repository's own AGENTS.md, so the
 * repository's file is never touched. Its model traffic goes to the relay with the run's token.
 */
export function createCodexEngine(options: { cliPath: string }): Engine {
  const spec = codexSpec(options.cliPath);
  return {
    name: 'codex',
    api: 'openai',
    run: (input) => runCliEngine(spec, input),
    version: (sandbox, signal) => cliVersion('codex', options.cliPath, sandbox, signal),
  };
}

function codexSpec(cliPath: string): CliEngineSpec {
  return {
    engine: 'codex',
    label: 'Codex',
    prepare: async (input, prompt, resume) => codexInvocation(cliPath, input, prompt, resume),
    reader: (input, firstTurn) => {
      const state: CodexStreamState = {
        turn: firstTurn,
        workdir: input.sandbox.workdir,
        runKey: randomBytes(4).toString('hex'),
        started: new Map(),
        lastText: '',
        now: Date.now,
      };
      return { line: (line) => [translateCodexLine(line, state)], end: () => undefined };
    },
    lostSession: (output) => /no rollout found for thread id/i.test(output),
  };
}

/**
 * The shell command that writes Patchbay's instructions where Codex reads them and runs it, the
 * prompt on stdin. The sandbox is the boundary: Codex runs without its own sandbox (bubblewrap
 * inside bubblewrap cannot start) and without approval prompts (nobody could answer them).
 */
export function codexInvocation(
  cliPath: string,
  input: EngineRunInput,
  prompt: string,
  resume: EngineResume | undefined,
): CliInvocation {
  const home = engineStateDir(input.sandbox.workdir, 'codex');
  const overrides = codexConfig(input.relay.baseUrl).map((_, i) => `-c "$PATCHBAY_CODEX_C${i}"`);
  const command = [
    // Without its managed requirements nothing would gate its commands: it does not start.
    `test -r ${CODEX_MANAGED_DIR}/requirements.toml || { echo "Patchbay's gate for Codex is missing (${CODEX_MANAGED_DIR} is not bound)" >&2; exit 3; };`,
    // The agent can write CODEX_HOME: a config (MCP servers, trusted projects) or hooks it left there are not read.
    `mkdir -p "$CODEX_HOME" && rm -f "$CODEX_HOME/config.toml" "$CODEX_HOME/hooks.json" &&`,
    `printf '%s\\n' "$PATCHBAY_ENGINE_INSTRUCTIONS" > "$CODEX_HOME/AGENTS.md" &&`,
    'unset PATCHBAY_ENGINE_INSTRUCTIONS &&',
    `exec "$PATCHBAY_CODEX" exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox`,
    `--color never -m "$PATCHBAY_ENGINE_MODEL" ${overrides.join(' ')}`,
    resume ? `resume "$PATCHBAY_ENGINE_RESUME" -` : '-',
  ].join(' ');
  const env: Record<string, string> = {
    PATCHBAY_CODEX: cliPath,
    PATCHBAY_ENGINE_MODEL: input.relay.model,
    PATCHBAY_ENGINE_INSTRUCTIONS: engineInstructions(input, engineAskGuidance),
    PATCHBAY_RELAY_TOKEN: input.relay.token,
    // Where the gate's hook asks (patchbay-gate.mjs): the relay, as the sandbox reaches it.
    PATCHBAY_RELAY_URL: input.relay.baseUrl,
    CODEX_HOME: home,
    ...(resume && { PATCHBAY_ENGINE_RESUME: resume.engineSessionId }),
  };
  for (const [i, value] of codexConfig(input.relay.baseUrl).entries()) env[`PATCHBAY_CODEX_C${i}`] = value;
  return { command, env, stdin: prompt };
}
