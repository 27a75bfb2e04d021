import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { PROXY_URL } from '../../sandbox/egress-relay.ts';
import type { Config } from '../config.ts';
import type { RunLog } from '../core/run-log.ts';
import { createClaudeCodeEngine } from '../engines/claude-code-engine.ts';
import { CLAUDE_MANAGED_DIR, ENGINE_HOOKS_HOST_DIR } from '../engines/engine-hooks.ts';
import type { CliEngineName, Engine } from '../engines/engine.ts';
import type { Db } from '../../db/database.ts';
import { createSecretBox } from '../../integrations/github/secret-box.ts';
import { type ChatGPTSignInStore, createChatGPTSignIn } from '../engines/chatgpt-signin.ts';
import { createCodexSignInStore } from '../sessions/store/codex-signin-store.ts';
import { ENGINE_PACKAGES } from '../engines/engine-packages.ts';
import { type RelayUpstream, type RunningEngineRelay, startEngineRelay } from '../engines/engine-relay.ts';
import type { EngineDeps } from '../harness/engine-round.ts';
import { addOpenAIEngines } from './openai-engine-clis.ts';
import type { Shutdown } from './shutdown.ts';

/** Where the engines' CLIs appear inside a local sandbox (bound read-only from this host). */
const SANDBOX_ENGINES_DIR = '/opt/patchbay/engines';

/**
 * The engines of a process that takes runs, and their relay. Made before the local sandboxes (they
 * bind the CLIs and route `/engine-relay/` to the relay); the store usage is written to is given
 * once it exists (`recordTo`), before any run can start.
 */
export type EngineWiring = {
  deps: EngineDeps;
  /** The local sandbox provider's `engineBinds`. */
  binds: { hostPath: string; sandboxPath: string }[];
  /** The egress proxy's `engineRelay`. */
  relayUrl: string;
  /** The engines set up here (a Modal image installs their CLIs). */
  names: CliEngineName[];
  /** Serves the relay to sandboxes that reach it over the network (Modal): PUBLIC_URL/engine-relay/…. */
  relay: RunningEngineRelay;
  recordTo(store: Pick<RunLog, 'commitStep'>): void;
  /** Where the ChatGPT sign-in for Codex is kept (CODEX_AUTH=chatgpt), given once the database is open. */
  signInsFrom(db: Db): void;
};

export async function startEngines(
  config: Config,
  deps: { log: Logger; shutdown: Shutdown; serves: boolean },
): Promise<EngineWiring> {
  const { log } = deps;
  const target: { store?: Pick<RunLog, 'commitStep'>; signIns?: ChatGPTSignInStore } = {};
  const openai = config.engines.openai && withSignIn(config, config.engines.openai, target, log);
  const relay: RunningEngineRelay = await startEngineRelay({
    upstreams: {
      ...(config.engines.anthropic && { anthropic: config.engines.anthropic }),
      ...(openai && { openai }),
    },
    runLog: {
      commitStep: (sessionId, step) => {
        if (!target.store) throw new Error('the engine relay has no store yet');
        return target.store.commitStep(sessionId, step);
      },
    },
    log: log.child({ component: 'engine-relay' }),
    sandboxUrl: (url) => sandboxRelayUrl(config, url, deps.serves),
  });
  deps.shutdown.add(() => relay.close());
  const binds: EngineWiring['binds'] = [];
  const engines: Partial<Record<CliEngineName, Engine>> = {};
  // A Modal image installs the CLIs from npm (engineImageCommands): they are on its PATH by name.
  const claude = onModal(config)
    ? config.engines.anthropic && ENGINE_PACKAGES['claude-code'].bin
    : claudeCodeCli(config);
  if (claude) {
    const sandboxPath = `${SANDBOX_ENGINES_DIR}/claude-code`;
    const bound = config.sandbox.kind === 'local';
    // Its managed settings (the gate's hook) from a host directory, read-only where Claude Code reads them.
    if (bound)
      binds.push(
        { hostPath: dirname(claude), sandboxPath },
        { hostPath: ENGINE_HOOKS_HOST_DIR, sandboxPath: CLAUDE_MANAGED_DIR },
      );
    engines['claude-code'] = createClaudeCodeEngine({ cliPath: bound ? `${sandboxPath}/claude` : claude });
  } else if (config.engines.default === 'claude-code') {
    log.warn(
      'AGENT_ENGINE=claude-code but the Claude Code CLI is not installed here: run npm ci, or set CLAUDE_CODE_PATH',
    );
  }
  addOpenAIEngines(config, { engines, binds, sandboxDir: SANDBOX_ENGINES_DIR, log });
  return {
    deps: { default: config.engines.default, engines, relay },
    relay,
    binds,
    relayUrl: relay.url,
    names: Object.keys(engines) as CliEngineName[],
    recordTo: (store) => {
      target.store = store;
    },
    signInsFrom: (db) => {
      target.signIns = createCodexSignInStore(db);
    },
  };
}

/** With CODEX_AUTH=chatgpt, the OpenAI upstream (the ChatGPT backend) signs its calls with the stored sign-in. */
function withSignIn(
  config: Config,
  upstream: RelayUpstream,
  target: { signIns?: ChatGPTSignInStore },
  log: Logger,
): RelayUpstream {
  const chatgpt = config.engines.chatgpt;
  if (!chatgpt) return upstream;
  const store = (): ChatGPTSignInStore => {
    if (!target.signIns) throw new Error('the ChatGPT sign-in store is not open yet');
    return target.signIns;
  };
  const signIn = createChatGPTSignIn({
    store: {
      read: () => store().read(),
      withLocked: (work) => store().withLocked(work),
      put: (save) => store().put(save),
      remove: () => store().remove(),
    },
    box: createSecretBox(chatgpt.secretKey),
    endpoint: { tokenUrl: chatgpt.tokenUrl },
    log: log.child({ component: 'chatgpt-sign-in' }),
  });
  return { ...upstream, signIn };
}

/**
 * How a sandbox reaches the relay: through its egress proxy, directly on the host's network, or not
 * at all. A Modal sandbox reaches the internet, not this host's loopback: it goes to this process's
 * HTTP server at PUBLIC_URL (which a process without the server does not have).
 */
export function sandboxRelayUrl(config: Config, relayUrl: string, serves: boolean): string | { unreachable: string } {
  if (config.sandbox.network === 'none')
    return { unreachable: 'sandboxes cannot reach the engine relay with SANDBOX_NETWORK=none' };
  if (onModal(config))
    return serves
      ? `${config.publicUrl}/engine-relay`
      : {
          unreachable:
            'a Modal sandbox reaches the engine relay at PUBLIC_URL/engine-relay, which a worker without the HTTP server (patchbay worker) does not serve: run engines on patchbay serve',
        };
  switch (config.sandbox.network) {
    case 'proxy':
      return `${PROXY_URL}/engine-relay`;
    case 'host':
      return relayUrl;
    default: {
      const _never: never = config.sandbox.network;
      return _never;
    }
  }
}

function onModal(config: Pick<Config, 'sandbox'>): boolean {
  return config.sandbox.kind === 'modal';
}

/** The Claude Code binary: CLAUDE_CODE_PATH, else the platform package npm installed with Patchbay. */
export function claudeCodeCli(config: Pick<Config, 'engines'>): string | undefined {
  if (config.engines.claudeCodePath) return config.engines.claudeCodePath;
  try {
    const pkg = createRequire(import.meta.url).resolve(
      `@anthropic-ai/claude-code-${process.platform}-${process.arch}/package.json`,
    );
    const binary = `${dirname(pkg)}/claude`;
    return existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}
