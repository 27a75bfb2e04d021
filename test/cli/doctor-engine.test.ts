import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEngine } from '../../src/cli/doctor-engine-check.ts';
import { loadConfig } from '../../src/config.ts';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/fake-anthropic.ts';

/** `patchbay doctor`'s engine row: the real Claude Code CLI, a round trip through a relay to the Anthropic fake. */
describe('doctor: the Claude Code engine', () => {
  let anthropic: FakeAnthropic;
  beforeAll(async () => {
    anthropic = await startFakeAnthropic({ script: () => ({ content: [{ type: 'text', text: 'OK' }] }) });
  });
  afterAll(async () => anthropic?.close());

  const row = (env: Record<string, string>) =>
    checkEngine({
      config: loadConfig({
        DATA_DIR: '/tmp/patchbay-doctor-engine',
        AGENT_ENGINE: 'claude-code',
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
        ...env,
      }),
      log: pino({ level: 'silent' }),
      signal: AbortSignal.timeout(60_000),
    });

  it('is green when the CLI answers through the relay, which alone holds the key', { timeout: 90_000 }, async () => {
    const before = anthropic.calls.length;
    const result = await row({ ANTHROPIC_API_KEY: 'test-anthropic-key' });
    expect(result).toMatchObject({ check: 'engine', ok: true });
    expect(result!.detail).toMatch(
      /^Claude Code 2\.1\.\d+ \(Claude Code\) answered through the relay \(claude-sonnet-4-6, 1 model call\(s\)\)$/,
    );
    const calls = anthropic.calls.slice(before);
    expect(calls.length).toBe(1);
    expect(calls[0]!.headers['x-api-key']).toBe('test-anthropic-key');
    expect(anthropic.rejections).toEqual([]);
  });

  it('is red, saying what to do, with a wrong key or none', { timeout: 90_000 }, async () => {
    const wrong = await row({ ANTHROPIC_API_KEY: 'sk-ant-wrong' });
    expect(wrong).toMatchObject({ ok: false, fix: 'check ANTHROPIC_BASE_URL and the key or token (docs/engines.md)' });
    expect(anthropic.rejections.at(-1)).toBe('invalid x-api-key');
    anthropic.rejections.length = 0;
    expect(await row({})).toMatchObject({
      ok: false,
      detail: 'AGENT_ENGINE=claude-code has no credential for the relay to add',
    });
    expect(
      await checkEngine({ config: loadConfig({}), log: pino({ level: 'silent' }), signal: AbortSignal.timeout(1000) }),
    ).toBeUndefined();
  });
});
