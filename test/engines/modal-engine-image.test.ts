import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { modalNetwork } from '../../sandbox/modal/modal-network.ts';
import { loadConfig } from '../../src/config.ts';
import { ENGINE_HOOKS_HOST_DIR } from '../../src/engines/engine-hooks.ts';
import { ENGINE_HOOK_FILES, ENGINE_PACKAGES, engineImageCommands } from '../../src/engines/engine-packages.ts';
import { sandboxRelayUrl, startEngines } from '../../src/start/engine-wiring.ts';
import { createShutdown } from '../../src/start/shutdown.ts';
import { buildImage } from '../fakes/modal/fake-modal-image.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};
const pins = { ...pkg.dependencies, ...pkg.optionalDependencies };
/** The default Modal image as the SDK sends it: the registry image, then its Dockerfile commands on `FROM base`. */
const BASE = buildImage(['FROM node:22-bookworm-slim']);

describe("the engines' CLIs in the Modal image", () => {
  it('are the versions package.json pins', () => {
    expect(ENGINE_PACKAGES['claude-code'].version).toBe(pins['@anthropic-ai/claude-code']);
    expect(ENGINE_PACKAGES.codex.version).toBe(pins['@openai/codex']);
    // opencode-ai installs its platform's package, which package.json pins (see docs/engines.md).
    expect(ENGINE_PACKAGES.opencode.version).toBe(pins['opencode-linux-x64']);
  });

  it('a SANDBOX=modal installation with both providers installs all three, and the image build puts each on PATH', async () => {
    const config = loadConfig({
      SANDBOX: 'modal',
      MODAL_TOKEN_ID: 'ak-test',
      MODAL_TOKEN_SECRET: 'as-test',
      PUBLIC_URL: 'https://patchbay.example.com',
      ANTHROPIC_API_KEY: 'sk-ant-test',
      OPENAI_API_KEY: 'sk-openai-test',
      LOG_LEVEL: 'silent',
    });
    const shutdown = createShutdown(pino({ level: 'silent' }));
    try {
      const engines = await startEngines(config, { log: pino({ level: 'silent' }), shutdown, serves: true });
      expect(engines.names.sort()).toEqual(['claude-code', 'codex', 'opencode']);
      const commands = engineImageCommands(engines.names);
      expect(commands[0]).toBe(
        'RUN npm install -g --no-fund --no-audit @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 opencode-ai@1.18.33',
      );
      const built = buildImage(['FROM base', ...commands], BASE);
      expect(built.failure).toBeUndefined();
      expect(built.tools.map((t) => t.bin)).toEqual(['claude', 'codex', 'opencode']);
      // Each engine runs its CLI by the name the image put on PATH.
      const lease = engines.deps.relay.open({
        sessionId: 's',
        engine: 'claude-code',
        api: 'anthropic',
        firstTurn: 0,
        maxCostUsd: 1,
        signal: new AbortController().signal,
      });
      expect(lease.access.baseUrl).toBe('https://patchbay.example.com/engine-relay');
      lease.close();
    } finally {
      await shutdown.close();
    }
  });

  it('a build whose npm install leaves out a CLI or names another version does not give it; the fake fails a version it cannot serve', () => {
    const without = buildImage(['FROM base', ...engineImageCommands(['codex'])], BASE);
    expect(without.tools.map((t) => t.bin)).toEqual(['codex']);
    const other = buildImage(['FROM base', 'RUN npm install -g @anthropic-ai/claude-code@2.0.0'], BASE);
    expect(other.failure).toMatch(/notarget No matching version found for @anthropic-ai\/claude-code@2\.0\.0/);
    const noNode = buildImage(['FROM debian:bookworm-slim', ...engineImageCommands(['claude-code'])]);
    expect(noNode.failure).toMatch(/npm: not found/);
  });
});

describe("the gate's managed files in the Modal image", () => {
  const repoBytes = (file: string) => readFileSync(join(ENGINE_HOOKS_HOST_DIR, file));
  const modes = (files: { path: string; mode: number }[]) =>
    Object.fromEntries(files.map((f) => [f.path, f.mode.toString(8)]));

  it("are the repository's bytes, in /etc/claude-code and /etc/codex, read-only by mode", () => {
    // Every file of the managed directory goes in (a file added there is not left out of the image).
    expect(readdirSync(ENGINE_HOOKS_HOST_DIR).sort()).toEqual([...ENGINE_HOOK_FILES]);
    const built = buildImage(['FROM base', ...engineImageCommands(['opencode', 'codex', 'claude-code'])], BASE);
    expect(built.failure).toBeUndefined();
    for (const dir of ['/etc/claude-code', '/etc/codex'])
      for (const file of ENGINE_HOOK_FILES)
        expect(built.files.find((f) => f.path === `${dir}/${file}`)?.bytes?.equals(repoBytes(file))).toBe(true);
    expect(modes(built.files)).toEqual({
      '/etc/claude-code': '555',
      '/etc/claude-code/managed-settings.json': '444',
      '/etc/claude-code/patchbay-gate.mjs': '444',
      '/etc/claude-code/requirements.toml': '444',
      '/etc/codex': '555',
      '/etc/codex/managed-settings.json': '444',
      '/etc/codex/patchbay-gate.mjs': '444',
      '/etc/codex/requirements.toml': '444',
    });
  });

  it('go only where an engine with a hook reads them, and the commands are the same every time (the image caches)', () => {
    expect(buildImage(['FROM base', ...engineImageCommands(['opencode'])], BASE).files).toEqual([]);
    const claude = buildImage(['FROM base', ...engineImageCommands(['claude-code'])], BASE);
    expect(claude.files.map((f) => f.path).filter((p) => !p.startsWith('/etc/claude-code'))).toEqual([]);
    expect(engineImageCommands(['codex', 'claude-code'])).toEqual(engineImageCommands(['claude-code', 'codex']));
  });

  it('the fake fails a build that writes them another way, or into a directory it did not make', () => {
    const other = buildImage(['FROM base', "RUN printf '%s' x > /etc/codex/requirements.toml"], BASE);
    expect(other.failure).toMatch(/the fake cannot run/);
    const noDir = buildImage(['FROM base', 'RUN echo eA== | base64 -d > /etc/codex/requirements.toml'], BASE);
    expect(noDir.failure).toMatch(/cannot create \/etc\/codex\/requirements.toml: Directory nonexistent/);
    const bad = buildImage(['FROM base', 'RUN mkdir -p /etc/codex && echo e!== | base64 -d > /etc/codex/x'], BASE);
    expect(bad.failure).toBe('base64: invalid input');
  });
});

describe('where a Modal sandbox reaches the relay', () => {
  const modalEnv = { SANDBOX: 'modal', PUBLIC_URL: 'https://patchbay.example.com/', LOG_LEVEL: 'silent' };
  it('PUBLIC_URL/engine-relay in a process that serves HTTP; a stated reason in a worker without it, or with no network', () => {
    expect(sandboxRelayUrl(loadConfig(modalEnv), 'http://127.0.0.1:4000', true)).toBe(
      'https://patchbay.example.com/engine-relay',
    );
    expect(sandboxRelayUrl(loadConfig(modalEnv), 'http://127.0.0.1:4000', false)).toEqual({
      unreachable: expect.stringContaining('patchbay worker'),
    });
    expect(
      sandboxRelayUrl(loadConfig({ ...modalEnv, SANDBOX_NETWORK: 'none' }), 'http://127.0.0.1:4000', true),
    ).toEqual({
      unreachable: expect.stringContaining('SANDBOX_NETWORK=none'),
    });
  });
});

describe("a Modal sandbox's network with engines", () => {
  it.each([
    ['proxy', 'patchbay.example.com', { outboundDomainAllowlist: ['patchbay.example.com'], outboundCidrAllowlist: [] }],
    ['proxy', '198.51.100.7', { outboundDomainAllowlist: [], outboundCidrAllowlist: ['198.51.100.7/32'] }],
    ['proxy', '[2001:db8::7]', { outboundDomainAllowlist: [], outboundCidrAllowlist: ['2001:db8::7/128'] }],
    ['proxy', undefined, { blockNetwork: true }],
    ['none', 'patchbay.example.com', { blockNetwork: true }],
    ['host', 'patchbay.example.com', {}],
  ] as const)('SANDBOX_NETWORK=%s with the relay at %s (empty allowlist)', (network, relayHost, params) => {
    expect(modalNetwork(network, [], relayHost).params).toEqual(params);
  });

  it('adds the relay host to the allowlist', () => {
    const rules = [{ kind: 'domain' as const, domain: 'registry.npmjs.org', wildcard: false }];
    expect(modalNetwork('proxy', rules, 'patchbay.example.com').params).toEqual({
      outboundDomainAllowlist: ['patchbay.example.com', 'registry.npmjs.org'],
      outboundCidrAllowlist: [],
    });
  });
});
