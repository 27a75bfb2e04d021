import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/index.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { createScreenshotTool } from '../../src/agent/screenshot-tool.ts';
import type { ToolContext } from '../../src/agent/tool.ts';
import { createToolRegistry } from '../../src/agent/tool-registry.ts';
import type { ArtifactStore } from '../../src/core/artifact-store.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { makeProvider } from '../sandbox/sandbox-test-helpers.ts';
import { decodePng } from './png-pixels.ts';

const PAGE = `<!doctype html><html><body style="margin:0;background:#fff">
<button style="position:absolute;left:0;top:0;width:200px;height:100px;border:0;background:#ff0000">Buy</button>
</body></html>`;

/** The sandbox, counting the commands run through it (a refused URL must run none). */
function counting(sandbox: Sandbox): { sandbox: Sandbox; commands: () => number } {
  let commands = 0;
  const counted = Object.create(sandbox) as Sandbox;
  counted.exec = (command, options) => {
    commands += 1;
    return sandbox.exec(command, options);
  };
  return { sandbox: counted, commands: () => commands };
}

describe('screenshot tool in a real local sandbox', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let artifacts: ArtifactStore;
  const sessionId = 'shot-session';

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider());
    database = await createTestDatabase();
    await createSessionStore(database.db).create({
      id: sessionId,
      repo: 'https://github.com/acme/shop',
      prompt: 'make the button red',
      title: 'red button',
      requester: { source: 'web', id: 'ada', name: 'Ada' },
      thread: { source: 'web' },
    });
    artifacts = createPgArtifactStore(database.db);
  }, 60_000);
  afterAll(async () => {
    await database?.close();
    await cleanup?.();
  });

  async function context(sandbox: Sandbox): Promise<ToolContext> {
    return { sandbox, sessionId, signal: new AbortController().signal, log: pino({ level: 'silent' }) };
  }

  it('starts the server in the sandbox, sees the red button, and keeps the picture with the session', async () => {
    const sandbox = await provider.acquire(sessionId, { network: 'none' });
    await sandbox.writeFile('site/index.html', PAGE);
    const registry = createToolRegistry([createScreenshotTool()], { artifacts });
    const output = await registry.execute(
      {
        id: 'call-1',
        name: 'screenshot',
        input: {
          url: 'http://127.0.0.1:8131/index.html',
          width: 640,
          height: 400,
          server: 'cd site && exec python3 -m http.server 8131 --bind 127.0.0.1',
        },
      },
      await context(sandbox),
    );
    await sandbox.release();
    expect(output.isError ?? false, output.content).toBe(false);
    expect(output.images).toHaveLength(1);
    const image = output.images?.[0];
    expect(image).toMatchObject({ mediaType: 'image/png', width: 640, height: 400 });
    const pixels = decodePng(Buffer.from(image?.data ?? '', 'base64'));
    expect([pixels.width, pixels.height]).toEqual([640, 400]);
    const [r, g, b] = pixels.at(20, 80);
    expect(r).toBeGreaterThan(220);
    expect(g).toBeLessThan(40);
    expect(b).toBeLessThan(40);
    expect(pixels.at(500, 300)).toEqual([255, 255, 255]);

    const kept = await artifacts.list(sessionId);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ kind: 'screenshot', mediaType: 'image/png', width: 640, height: 400 });
    expect(kept[0]?.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(output.content).toContain(kept[0]?.id);
    const stored = await artifacts.get(kept[0]?.id ?? '');
    expect(Buffer.from(stored?.bytes ?? []).toString('base64')).toBe(image?.data);
  }, 120_000);

  it('takes a full page down to the end of its content', async () => {
    const sandbox = await provider.acquire(sessionId, { network: 'none' });
    await sandbox.writeFile(
      'long/index.html',
      '<!doctype html><html><body style="margin:0;background:#fff"><div style="position:absolute;left:0;top:1500px;width:100px;height:100px;background:#ff0000"></div></body></html>',
    );
    const registry = createToolRegistry([createScreenshotTool()]);
    const output = await registry.execute(
      {
        id: 'call-long',
        name: 'screenshot',
        input: {
          url: 'http://127.0.0.1:8133/',
          width: 400,
          fullPage: true,
          server: 'cd long && exec python3 -m http.server 8133 --bind 127.0.0.1',
        },
      },
      await context(sandbox),
    );
    await sandbox.release();
    expect(output.isError ?? false, output.content).toBe(false);
    const image = output.images?.[0];
    expect(image).toMatchObject({ width: 400, height: 1600 });
    const pixels = decodePng(Buffer.from(image?.data ?? '', 'base64'));
    expect([pixels.width, pixels.height]).toEqual([400, 1600]);
    expect(pixels.at(50, 1550)).toEqual([255, 0, 0]);
    expect(pixels.at(300, 1550)).toEqual([255, 255, 255]);
  }, 120_000);

  it.each([
    'http://example.com/',
    'http://10.0.0.1:8080/',
    'file:///etc/passwd',
    'http://127.0.0.2/',
    'http://user:pw@127.0.0.1/',
    'not a url',
  ])('refuses %s and runs nothing', async (url) => {
    const acquired = await provider.acquire('shot-refused', { network: 'none' });
    const { sandbox, commands } = counting(acquired);
    const registry = createToolRegistry([createScreenshotTool()], { artifacts });
    const output = await registry.execute(
      { id: 'call-2', name: 'screenshot', input: { url, server: 'touch server-ran' } },
      await context(sandbox),
    );
    const files = await acquired.listFiles('.');
    await acquired.release();
    expect(output.isError).toBe(true);
    expect(output.content).toMatch(/refused|not a URL|only http and https/i);
    expect(output.images).toBeUndefined();
    expect(commands()).toBe(0);
    expect(files.map((f) => f.path)).not.toContain('server-ran');
  });

  it('holds the server command to the shell policy, and runs nothing when it refuses it', async () => {
    const acquired = await provider.acquire('shot-refused', { network: 'none' });
    const { sandbox, commands } = counting(acquired);
    const output = await createToolRegistry([createScreenshotTool()]).execute(
      { id: 'call-push', name: 'screenshot', input: { url: 'http://127.0.0.1:8134/', server: 'git push origin main' } },
      await context(sandbox),
    );
    await acquired.release();
    expect(output.isError).toBe(true);
    expect(output.content).toMatch(/^Server command refused: /);
    expect(commands()).toBe(0);
  });

  it('says so when nothing answers at the URL', async () => {
    const sandbox = await provider.acquire('shot-nothing', { network: 'none' });
    const registry = createToolRegistry([createScreenshotTool()]);
    const output = await registry.execute(
      { id: 'call-3', name: 'screenshot', input: { url: 'http://localhost:8132/' } },
      await context(sandbox),
    );
    await sandbox.release();
    expect(output.isError).toBe(true);
    expect(output.content).toContain('Nothing answers at http://localhost:8132/');
  }, 60_000);
});
