import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeError } from '../core/errors.ts';
import { claudeOfflineEnv } from '../engines/claude-code-engine.ts';
import { startEngineRelay } from '../engines/engine-relay.ts';
import { claudeCodeCli } from '../start/engine-wiring.ts';
import type { DoctorDeps, DoctorRow } from './doctor-checks.ts';

const ok = (detail: string): DoctorRow => ({ check: 'engine', ok: true, detail });
const bad = (detail: string, fix: string): DoctorRow => ({ check: 'engine', ok: false, detail, fix });

/**
 * The engine AGENT_ENGINE names, as runs use it: its CLI's installed version, then a real round trip
 * through a relay started here (the CLI gets only a relay token, the relay adds the credential and
 * forwards to the configured provider). Nothing for Patchbay's own loop (the model row covers it).
 * Codex and OpenCode are checked by their own engines' rows when they are set up.
 */
export async function checkEngine({ config, log, signal }: DoctorDeps): Promise<DoctorRow | undefined> {
  if (config.engines.default !== 'claude-code') return undefined;
  const cli = claudeCodeCli(config);
  if (!cli)
    return bad(
      'AGENT_ENGINE=claude-code, but the Claude Code CLI is not installed here',
      'run npm ci (it installs @anthropic-ai/claude-code), or set CLAUDE_CODE_PATH to its binary',
    );
  const upstream = config.engines.anthropic;
  if (!upstream)
    return bad(
      'AGENT_ENGINE=claude-code has no credential for the relay to add',
      'set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN for a Claude subscription (docs/engines.md)',
    );
  const version = await runCli(cli, ['--version'], {}, signal);
  if (version.code !== 0) return bad(`${cli} --version failed: ${version.err}`, 'reinstall with npm ci');
  const relay = await startEngineRelay({
    upstreams: { anthropic: upstream },
    runLog: { commitStep: async () => [] },
    log: log.child({ component: 'engine-relay' }),
    sandboxUrl: (url) => url,
  });
  const home = await mkdtemp(join(tmpdir(), 'patchbay-doctor-claude-'));
  try {
    const lease = relay.open({
      sessionId: 'doctor',
      engine: 'claude-code',
      api: 'anthropic',
      firstTurn: 0,
      maxCostUsd: 1,
      signal,
    });
    const trip = await runCli(
      cli,
      ['-p', '--output-format', 'json', '--model', upstream.model, 'Reply with the word OK.'],
      {
        HOME: home,
        // One try: a wrong key is said at once, not after the CLI's backoff.
        CLAUDE_CODE_MAX_RETRIES: '0',
        CLAUDE_CONFIG_DIR: home,
        ANTHROPIC_BASE_URL: lease.access.baseUrl,
        ANTHROPIC_API_KEY: lease.access.token,
      },
      signal,
    );
    const calls = lease.spent().calls;
    lease.close();
    if (trip.code !== 0 || calls === 0)
      return bad(
        `Claude Code ${version.out.trim()} could not reach ${upstream.baseUrl} through the relay: ${(trip.out || trip.err).trim().slice(0, 300)}`,
        'check ANTHROPIC_BASE_URL and the key or token (docs/engines.md)',
      );
    return ok(
      `Claude Code ${version.out.trim()} answered through the relay (${upstream.model}, ${calls} model call(s))`,
    );
  } catch (error) {
    return bad(`Claude Code: ${describeError(error)}`, 'see the message');
  } finally {
    await relay.close();
    await rm(home, { recursive: true, force: true });
  }
}

/** Runs the CLI on this host with only the variables given (no credential of this process). */
export function runCli(
  cli: string,
  args: string[],
  env: Record<string, string>,
  signal: AbortSignal,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(cli, args, {
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...claudeOfflineEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', (error) => resolve({ code: null, out, err: err || error.message }));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}
