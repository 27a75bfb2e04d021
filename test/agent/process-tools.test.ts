import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/index.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { createDefaultTools } from '../../src/agent/default-tools.ts';
import { stopProcessHost } from '../../src/agent/sandbox-host/process-host.ts';
import type { ToolContext } from '../../src/agent/tool.ts';
import { createToolRegistry } from '../../src/agent/tool-registry.ts';
import { makeProvider, pidsWithMarker } from '../sandbox/sandbox-test-helpers.ts';

const PAGE = `<!doctype html><title>Form</title>
<label>Colour <select id="colour"><option value="r">red</option><option value="b">blue</option></select></label>
<p id="said">nothing chosen</p>
<button id="warn">Warn</button> <a href="/other.html">Other</a>
<script>
colour.addEventListener('change', () => { said.textContent = 'chose ' + colour.value; });
warn.addEventListener('click', () => {
  alert('careful');
  setTimeout(() => { throw new Error('kaboom'); }, 300);
  setTimeout(() => said.remove(), 900);
});
</script>
`;

/** The sandbox, counting the commands run through it (a refused command must run none). */
function counting(sandbox: Sandbox): { sandbox: Sandbox; commands: () => number } {
  let commands = 0;
  const counted = Object.create(sandbox) as Sandbox;
  counted.exec = (command, options) => {
    commands += 1;
    return sandbox.exec(command, options);
  };
  return { sandbox: counted, commands: () => commands };
}

/** The process and browser tools against a real local sandbox, through the registry the runner uses. */
describe('background processes and the browser in a real local sandbox', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  const registry = createToolRegistry(createDefaultTools());
  let sandbox: Sandbox;
  let ctx: ToolContext;
  const call = (name: string, input: Record<string, unknown> = {}, context: ToolContext = ctx) =>
    registry.execute({ id: `call-${name}`, name, input }, context);

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider());
    sandbox = await provider.acquire('process-tools', { network: 'none' });
    await sandbox.exec('git init -q .');
    await sandbox.writeFile('index.html', PAGE);
    await sandbox.writeFile('other.html', '<h1>Other page</h1>');
    ctx = { sandbox, sessionId: 'process-tools', signal: new AbortController().signal, log: pino({ level: 'silent' }) };
  }, 60_000);
  afterAll(async () => {
    await stopProcessHost(sandbox);
    await sandbox?.release();
    await cleanup?.();
  });

  it('refuses a command the policy refuses before anything runs', async () => {
    const counted = counting(sandbox);
    const output = await call(
      'process_start',
      { command: 'sudo python3 -m http.server 8190' },
      { ...ctx, sandbox: counted.sandbox },
    );
    expect(output.isError).toBe(true);
    expect(output.content).toMatch(/^Command refused: /);
    expect(counted.commands()).toBe(0);
  });

  it('keeps a process running across calls, reads its output, caps how many run, and stops it', async () => {
    const marker = `sleep 77${Math.floor(Math.random() * 1000)}`;
    const started = await call('process_start', { command: `echo started; exec ${marker}` });
    expect(started.isError ?? false, started.content).toBe(false);
    expect(started.content).toMatch(/^Started p\d+ running: /);
    const id = /p\d+/.exec(started.content)![0];
    expect((await call('process_output', { id })).content).toContain('started');
    expect(await pidsWithMarker(marker)).toHaveLength(1);
    const more = [];
    for (let i = 0; i < 3; i++) more.push(await call('process_start', { command: `exec ${marker}` }));
    expect(more.map((o) => o.isError ?? false)).toEqual([false, false, false]);
    const over = await call('process_start', { command: `exec ${marker}` });
    expect(over).toMatchObject({
      isError: true,
      content: '4 background processes run already (the most): stop one first',
    });
    const stopped = await call('process_stop', { id });
    expect(stopped.content).toMatch(new RegExp(`^Stopped. ${id} ended`));
    expect(await pidsWithMarker(marker)).toHaveLength(3);
    expect((await call('process_list')).content).toContain(`${id} ended`);
    for (const output of more) await call('process_stop', { id: /p\d+/.exec(output.content)![0] });
    expect(await pidsWithMarker(marker)).toEqual([]);
  });

  it('says when a process ends before its port answers, with what it printed', async () => {
    const output = await call('process_start', { command: 'echo no server here; exit 3', port: 8191, waitSeconds: 5 });
    expect(output.isError).toBe(true);
    expect(output.content).toContain('ended (exit 3)');
    expect(output.content).toContain('no server here');
  });

  it('selects, waits, reports dialogs and page errors, and refuses a reference from another page', async () => {
    const server = await call('process_start', {
      command: 'exec python3 -m http.server 8192 --bind 127.0.0.1',
      port: 8192,
    });
    expect(server.isError ?? false, server.content).toBe(false);
    const opened = await call('browser_open', { url: 'http://127.0.0.1:8192/index.html' });
    expect(opened.content).toContain('combobox "Colour" [ref=e1]: red (options: "red", "blue")');
    const chosen = await call('browser_select', { ref: 'e1', values: ['blue'] });
    expect(chosen.content).toContain('text: chose b');
    const warned = await call('browser_click', { ref: 'e2' });
    expect(warned.content).toContain('Dialog (alert, accepted): careful');
    const gone = await call('browser_wait_for', { selector: '#said', gone: true, seconds: 5 });
    expect(gone.isError ?? false, gone.content).toBe(false);
    // The error comes during the click or the wait: one of the two answers names it as new.
    expect(`${warned.content}\n${gone.content}`).toContain('- pageerror: Error: kaboom');
    expect((await call('browser_console')).content).toContain('pageerror: Error: kaboom');
    const moved = await call('browser_click', { ref: 'e3' });
    expect(moved.content).toContain('URL: http://127.0.0.1:8192/other.html (was http://127.0.0.1:8192/index.html)');
    const stale = await call('browser_click', { ref: 'e2' });
    expect(stale).toMatchObject({ isError: true });
    expect(stale.content).toContain('There is no element e2 on this page');
    const waited = await call('browser_wait_for', { text: 'never shown', seconds: 1 });
    expect(waited).toMatchObject({ isError: true, content: 'waited 1s and the page never showed what was asked' });
    const refused = await call('browser_open', { url: 'file:///etc/passwd' });
    expect(refused).toMatchObject({ isError: true });
    expect(refused.content).toContain('Only http and https URLs can be opened');
  });
});
