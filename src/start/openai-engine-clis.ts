import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { createCodexEngine } from '../engines/codex-engine.ts';
import { CODEX_MANAGED_DIR, ENGINE_HOOKS_HOST_DIR } from '../engines/engine-hooks.ts';
import type { CliEngineName, Engine } from '../engines/engine.ts';
import { createOpencodeEngine } from '../engines/opencode-engine.ts';
import { ENGINE_PACKAGES } from '../engines/engine-packages.ts';

/** The platform packages npm installs with `@openai/codex` (a static musl binary) per Node platform and arch. */
const codexTargets: Record<string, string> = {
  'linux-x64': 'x86_64-unknown-linux-musl',
  'linux-arm64': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
};

/** The Codex binary: CODEX_PATH, else the platform package npm installed with Patchbay. */
export function codexCli(config: Pick<Config, 'engines'>): string | undefined {
  if (config.engines.codexPath) return config.engines.codexPath;
  const target = codexTargets[`${process.platform}-${process.arch}`];
  if (!target) return undefined;
  return installed(`@openai/codex-${process.platform}-${process.arch}`, `vendor/${target}/bin/codex`);
}

/**
 * The OpenCode binary: OPENCODE_PATH, else the platform package npm installed with Patchbay (its
 * `-baseline` build on an x64 CPU without AVX2, as OpenCode's own installer picks).
 */
export function opencodeCli(config: Pick<Config, 'engines'>): string | undefined {
  if (config.engines.opencodePath) return config.engines.opencodePath;
  const base = `opencode-${process.platform}-${process.arch}`;
  const names = process.arch === 'x64' && !hasAvx2() ? [`${base}-baseline`, base] : [base, `${base}-baseline`];
  for (const name of names) {
    const binary = installed(name, 'bin/opencode');
    if (binary) return binary;
  }
  return undefined;
}

function installed(pkg: string, file: string): string | undefined {
  try {
    const binary = `${dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`))}/${file}`;
    return existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

function hasAvx2(): boolean {
  try {
    return /(^|\s)avx2(\s|$)/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Sets up Codex and OpenCode where their CLI is installed and their model traffic has an upstream
 * (OPENAI_API_KEY or an OpenCode Zen key; OpenCode may speak Anthropic's API instead): each
 * binary's directory is bound read-only into local sandboxes at `sandboxDir/<engine>`.
 */
export function addOpenAIEngines(
  config: Config,
  into: {
    engines: Partial<Record<CliEngineName, Engine>>;
    binds: { hostPath: string; sandboxPath: string }[];
    sandboxDir: string;
    log: Logger;
  },
): void {
  const bound = config.sandbox.kind === 'local';
  const onModal = config.sandbox.kind === 'modal';
  const place = (engine: CliEngineName, binary: string) => {
    const sandboxPath = `${into.sandboxDir}/${engine}`;
    if (bound) into.binds.push({ hostPath: dirname(binary), sandboxPath });
    return bound ? `${sandboxPath}/${binary.slice(dirname(binary).length + 1)}` : binary;
  };
  // A Modal image installs the CLIs from npm (engineImageCommands): they are on its PATH by name.
  const codex = onModal ? ENGINE_PACKAGES.codex.bin : codexCli(config);
  if (codex && config.engines.openai) {
    into.engines.codex = createCodexEngine({ cliPath: place('codex', codex) });
    // Its managed requirements (the gate's hook) from a host directory, read-only where Codex reads them.
    if (bound) into.binds.push({ hostPath: ENGINE_HOOKS_HOST_DIR, sandboxPath: CODEX_MANAGED_DIR });
  } else if (config.engines.default === 'codex')
    into.log.warn(unavailable('Codex', codex, 'CODEX_PATH', 'OPENAI_API_KEY'));
  const opencode = onModal ? ENGINE_PACKAGES.opencode.bin : opencodeCli(config);
  const api = config.engines.opencodeApi;
  if (opencode && config.engines[api])
    into.engines.opencode = createOpencodeEngine({ cliPath: place('opencode', opencode), api });
  else if (config.engines.default === 'opencode')
    into.log.warn(
      unavailable(
        'OpenCode',
        opencode,
        'OPENCODE_PATH',
        api === 'openai' ? 'OPENAI_API_KEY or OPENCODE_ZEN_API_KEY' : 'ANTHROPIC_API_KEY',
      ),
    );
}

/** The one line that says why AGENT_ENGINE names an engine this process cannot run. */
function unavailable(label: string, binary: string | undefined, pathVar: string, keyVar: string): string {
  return binary
    ? `AGENT_ENGINE names ${label} but its model traffic has no credential: set ${keyVar}`
    : `AGENT_ENGINE names ${label} but its CLI is not installed here: run npm ci, or set ${pathVar}`;
}
