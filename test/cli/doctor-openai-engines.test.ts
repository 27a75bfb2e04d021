import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOpenAIEngine } from '../../src/cli/doctor-openai-engines.ts';
import { loadConfig } from '../../src/config.ts';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.ts';

/** `patchbay doctor`'s engine row for Codex and OpenCode: the real CLI, a round trip through a relay to the Responses fake. */
describe('doctor: the Codex and OpenCode engines', () => {
  let openai: FakeOpenAI;
  beforeAll(async () => {
    openai = await startFakeOpenAI({ responses: () => ({ text: 'OK' }) });
  });
  afterAll(async () => openai?.close());

  const row = (engine: string, env: Record<string, string>) =>
    checkOpenAIEngine({
      config: loadConfig({
        DATA_DIR: '/tmp/patchbay-doctor-engine',
        AGENT_ENGINE: engine,
        OPENAI_BASE_URL: openai.baseUrl,
        CODEX_MODEL: 'gpt-5.5',
        ...env,
      }),
      log: pino({ level: 'silent' }),
      signal: AbortSignal.timeout(120_000),
    });

  it.each([
    ['codex', /^Codex codex-cli 0\.171\.0 answered through the relay \(gpt-5\.5, 1 model call\(s\)\)$/],
    ['opencode', /^OpenCode 1\.18\.33 answered through the relay \(gpt-5\.5, 1 model call\(s\)\)$/],
  ])(
    '%s is green when the CLI answers through the relay, which alone holds the key',
    {
      timeout: 150_000,
    },
    async (engine, detail) => {
      const before = openai.calls.length;
      const result = await row(engine, { OPENAI_API_KEY: 'test-openai-key' });
      expect(result).toMatchObject({ check: 'engine', ok: true });
      expect(result!.detail).toMatch(detail);
      const calls = openai.calls.slice(before);
      expect(calls.length).toBe(1);
      expect(calls[0]!.headers.authorization).toBe('Bearer test-openai-key');
      expect(openai.rejections).toEqual([]);
    },
  );

  it('is red, saying what to do, with a wrong key or none, and says nothing for other engines', {
    timeout: 150_000,
  }, async () => {
    const wrong = await row('codex', { OPENAI_API_KEY: 'sk-wrong' });
    expect(wrong).toMatchObject({ ok: false, fix: 'check the base URL and the key (docs/engines.md)' });
    expect(openai.rejections.at(-1)).toBe('Incorrect API key provided.');
    openai.rejections.length = 0;
    expect(await row('opencode', {})).toMatchObject({
      ok: false,
      detail: 'AGENT_ENGINE=opencode has no credential for the relay to add',
      fix: 'set OPENAI_API_KEY, or OPENCODE_ZEN_API_KEY (docs/engines.md)',
    });
    expect(await row('claude-code', { OPENAI_API_KEY: 'test-openai-key' })).toBeUndefined();
  });
});
