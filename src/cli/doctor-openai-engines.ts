import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeError } from '../core/errors.ts';
import { codexDoctorArgs } from '../engines/codex-engine.ts';
import type { RelayApi } from '../engines/engine.ts';
import { startEngineRelay } from '../engines/engine-relay.ts';
import { opencodeConfig, opencodeOfflineEnv } from '../engines/opencode-engine.ts';
import { codexCli, opencodeCli } from '../start/openai-engine-clis.ts';
import type { DoctorDeps, DoctorRow } from './doctor-checks.ts';
import { runCli } from './doctor-engine-check.ts';

const ok = (detail: string): DoctorRow => ({ check: 'engine', ok: true, detail });
const bad = (detail: string, fix: string): DoctorRow => ({ check: 'engine', ok: false, detail, fix });

/** How doctor runs one of the two CLIs: its binary, the API it speaks, and its one-shot command through a relay. */
type Probe = {
  label: string;
  cli: string | undefined;
  pathVar: string;
  api: RelayApi;
  roundTrip(
    baseUrl: string,
    token: string,
    model: string,
    home: string,
  ): { args: string[]; env: Record<string, string> };
};

/**
 * Codex or OpenCode when AGENT_ENGINE names it, as runs use it: the CLI's installed version, then a
 * real round trip through a relay started here (the CLI gets only a relay token; the relay adds the
 * credential and forwards to the configured provider). Undefined for the other engines.
 */
export async function checkOpenAIEngine({ config, log, signal }: DoctorDeps): Promise<DoctorRow | undefined> {
  const name = config.engines.default;
  if (name !== 'codex' && name !== 'opencode') return undefined;
  // A ChatGPT sign-in is refreshed and added by the running server's relay: its own row shows its state.
  if (name === 'codex' && config.engines.chatgpt) return undefined;
  const probe = name === 'codex' ? codexProbe(config) : opencodeProbe(config);
  if (!probe.cli)
    return bad(
      `AGENT_ENGINE=${name}, but the ${probe.label} CLI is not installed here`,
      `run npm ci, or set ${probe.pathVar} to its binary`,
    );
  const upstream = config.engines[probe.api];
  if (!upstream)
    return bad(
      `AGENT_ENGINE=${name} has no credential for the relay to add`,
      probe.api === 'openai'
        ? 'set OPENAI_API_KEY, or OPENCODE_ZEN_API_KEY (docs/engines.md)'
        : 'set ANTHROPIC_API_KEY (docs/engines.md)',
    );
  const version = await runCli(probe.cli, ['--version'], {}, signal);
  if (version.code !== 0) return bad(`${probe.cli} --version failed: ${version.err}`, 'reinstall with npm ci');
  const relay = await startEngineRelay({
    upstreams: { [probe.api]: upstream },
    runLog: { commitStep: async () => [] },
    log: log.child({ component: 'engine-relay' }),
    sandboxUrl: (url) => url,
  });
  const home = await mkdtemp(join(tmpdir(), `patchbay-doctor-${name}-`));
  try {
    const lease = relay.open({
      sessionId: 'doctor',
      engine: name,
      api: probe.api,
      firstTurn: 0,
      maxCostUsd: 1,
      signal,
    });
    const { args, env } = probe.roundTrip(lease.access.baseUrl, lease.access.token, upstream.model, home);
    const trip = await runCli(probe.cli, args, { HOME: home, ...env }, signal);
    const calls = lease.spent().calls;
    lease.close();
    const label = `${probe.label} ${version.out.trim()}`;
    if (trip.code !== 0 || calls === 0)
      return bad(
        `${label} could not reach ${upstream.baseUrl} through the relay: ${(trip.err || trip.out).trim().slice(-300)}`,
        'check the base URL and the key (docs/engines.md)',
      );
    return ok(`${label} answered through the relay (${upstream.model}, ${calls} model call(s))`);
  } catch (error) {
    return bad(`${probe.label}: ${describeError(error)}`, 'see the message');
  } finally {
    await relay.close();
    await rm(home, { recursive: true, force: true });
  }
}

function codexProbe(config: DoctorDeps['config']): Probe {
  return {
    label: 'Codex',
    cli: codexCli(config),
    pathVar: 'CODEX_PATH',
    api: 'openai',
    roundTrip: (baseUrl, token, model, home) => ({
      args: [...codexDoctorArgs(baseUrl, model, home), 'Reply with the word OK.'],
      env: { CODEX_HOME: home, PATCHBAY_RELAY_TOKEN: token },
    }),
  };
}

function opencodeProbe(config: DoctorDeps['config']): Probe {
  const api = config.engines.opencodeApi;
  return {
    label: 'OpenCode',
    cli: opencodeCli(config),
    pathVar: 'OPENCODE_PATH',
    api,
    roundTrip: (baseUrl, token, model, home) => ({
      args: ['run', '--format', 'json', '--dir', home, '--title', 'Patchbay doctor', 'Reply with the word OK.'],
      env: {
        ...opencodeOfflineEnv,
        XDG_DATA_HOME: `${home}/data`,
        XDG_CONFIG_HOME: `${home}/config`,
        XDG_CACHE_HOME: `${home}/cache`,
        XDG_STATE_HOME: `${home}/state`,
        PATCHBAY_RELAY_TOKEN: token,
        OPENCODE_CONFIG_CONTENT: opencodeConfig(api, { baseUrl, model }, `${home}/none.md`),
      },
    }),
  };
}
