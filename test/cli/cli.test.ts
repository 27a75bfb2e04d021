import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';

const exec = promisify(execFile);

type Result = { code: number; stdout: string; stderr: string };

async function patchbay(args: string[], env: Record<string, string>): Promise<Result> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['src/cli.ts', ...args], {
      // A developer's .env in the checkout (read by every command) stays out of the test's settings.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), PATCHBAY_ENV_FILE: '/dev/null', ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the patchbay command', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  let remote: RemoteFixture;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-cli-'));
    remote = await createRemote();
    env = { DATABASE_URL: database.url, DATA_DIR: join(dir, 'data') };
  });
  afterAll(async () => {
    await database.close();
    await remote.cleanup();
    await removeDataDir(dir);
  });

  it('demo: a scripted session writes a README, and the remote has the commit', async () => {
    const result = await patchbay(['demo'], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('→ write_file README.md');
    expect(result.stdout).toContain('→ git_status');
    expect(result.stdout).toMatch(/✓ pushed patchbay\/[0-9a-f]{8}-write-a-readme-for-this-project at [0-9a-f]{12}/);
    expect(result.stdout).toContain('The remote now has:');
    expect(result.stdout).toMatch(/README\.md \| 12 \+{12}/);
    // The demo's reviewer gives a verdict, and with no pull request nothing claims to be a draft.
    expect(result.stdout).toMatch(/verification of [0-9a-f]{12}: passed 8\/8/);
    expect(result.stdout).toMatch(/passed its gates at [0-9a-f]{12}; no pull request to mark ready/);
    expect(result.stdout).not.toMatch(/draft|ready for review/);
  });

  it('run: streams the session and exits 0 with the pushed branch', async () => {
    const scenario = join(dir, 'fix.json');
    await writeFile(
      scenario,
      JSON.stringify({
        turns: [
          {
            toolCalls: [
              { name: 'edit_file', input: { path: 'README.md', old_string: '# demo', new_string: '# Demo project' } },
            ],
          },
          { text: 'Capitalised the title.' },
        ],
      }),
    );
    const result = await patchbay(['run', '--repo', remote.remote, 'Capitalise the title'], {
      ...env,
      MODEL_PROVIDER: 'scripted',
      SCRIPTED_SCENARIO: scenario,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('» ');
    expect(result.stdout).toContain('◆ Capitalised the title.');
    const branch = /Done\. Branch (\S+) at ([0-9a-f]{12})\./.exec(result.stdout);
    expect(branch).not.toBeNull();
    expect(await git(remote.remote, 'show', `${branch![1]}:README.md`)).toBe('# Demo project');
  });

  it('run: a question with no terminal to ask at exits 3 and leaves the session waiting', async () => {
    const scenario = join(dir, 'ask.json');
    await writeFile(
      scenario,
      JSON.stringify({
        turns: [
          { toolCalls: [{ name: 'ask_user', input: { question: 'Which license?', choices: ['MIT', 'Apache-2.0'] } }] },
        ],
      }),
    );
    const result = await patchbay(['run', '--repo', remote.remote, 'Add a license'], {
      ...env,
      MODEL_PROVIDER: 'scripted',
      SCRIPTED_SCENARIO: scenario,
    });
    expect(result.code).toBe(3);
    expect(result.stdout).toContain('? Which license?');
    expect(result.stdout).toContain('choices: MIT | Apache-2.0');
    expect(result.stdout).toContain('stays waiting');
  });

  it('run: with no model configured, the session fails with the reason and the command exits 1', async () => {
    const result = await patchbay(['run', '--repo', remote.remote, 'Add a license'], env);
    expect(result.code).toBe(1);
    const reason = 'No model is configured on this Patchbay server: set MODEL_PROVIDER and its API key';
    // Said once: the error's line, not again on the status line or the last line.
    expect(result.stdout.split(reason)).toHaveLength(2);
    expect(result.stdout).toContain('Failed (the reason is above).');
    expect(result.stdout).not.toContain('Done.');
  });

  it('run: a clone that fails says what failed and what to do, once, with no git command or server path', async () => {
    const scenario = join(dir, 'unused.json');
    await writeFile(scenario, JSON.stringify({ turns: [{ text: 'never asked' }] }));
    const result = await patchbay(['run', '--repo', 'http://127.0.0.1:1/acme/shop', 'Add a license'], {
      ...env,
      MODEL_PROVIDER: 'scripted',
      SCRIPTED_SCENARIO: scenario,
    });
    expect(result.code).toBe(1);
    const said = 'Could not clone http://127.0.0.1:1/acme/shop: its host could not be reached.';
    expect(result.stdout.split(said)).toHaveLength(2);
    expect(result.stdout).toContain('Check the URL');
    expect(result.stdout).not.toMatch(/git clone|--bare|git_failed|mirrors|\.partial-/);
    expect(result.stdout).not.toContain(dir);
  });

  it('run: a base branch git would refuse is refused before anything starts', async () => {
    const result = await patchbay(['run', '--repo', remote.remote, '--base', 'main..x', 'Add a license'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Invalid base branch name "main..x"');
    expect(result.stdout).not.toContain('Session on');
  });

  it('refuses a bad configuration with one clear line per problem', async () => {
    const result = await patchbay(['serve'], { ...env, PORT: 'abc', SANDBOX: 'docker' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^patchbay: Invalid configuration:\n {2}PORT: .+\n {2}SANDBOX: .+\n$/);
  });

  it('serve on a port another process holds: one line, before the database or sandboxes start', async () => {
    const holder = createNetServer();
    await new Promise<void>((resolve) => holder.listen({ port: 0, host: '127.0.0.1' }, resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const dataDir = join(dir, 'busy-port');
      const result = await patchbay(['serve'], { PORT: String(port), DATA_DIR: dataDir });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `patchbay: PORT ${port} is already in use (another Patchbay or another server is listening there): stop it, or set PORT to a free port\n`,
      );
      expect(result.stdout).not.toMatch(/EADDRINUSE|PostgreSQL|database/i);
      // Nothing was started: the embedded database never made its directory.
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      holder.close();
    }
  });

  it('a worker with SANDBOX=modal and no Modal credentials is refused at start in one line', async () => {
    const home = await mkdtemp(join(tmpdir(), 'patchbay-no-modal-'));
    try {
      const result = await patchbay(['worker'], { ...env, HOME: home, SANDBOX: 'modal' });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `patchbay: SANDBOX=modal needs Modal credentials: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (modal.com → Settings → API Tokens), or run \`modal token new\` to write ${join(home, '.modal.toml')}\n`,
      );
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it('run while a server holds the embedded database says why in one line, and leaves the server running', {
    timeout: 90_000,
  }, async () => {
    const dataDir = join(dir, 'shared-data');
    const server = spawn(process.execPath, ['src/cli.ts', 'serve'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: tmpdir(),
        PATCHBAY_ENV_FILE: '/dev/null',
        DATA_DIR: dataDir,
        PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        server.stdout.on('data', (chunk: Buffer) => {
          out += String(chunk);
          if (out.includes('Patchbay is up')) resolve();
        });
        server.once('exit', (code) => reject(new Error(`the server exited (${code}): ${out}`)));
      });
      const result = await patchbay(['run', '--repo', remote.remote, 'Add a license'], { DATA_DIR: dataDir });
      expect(result.code).toBe(1);
      // Its last line says why (warnings before it are the command's own log, at LOG_LEVEL=warn); no stack.
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stderr.split('\n').at(-2)).toMatch(
        /^patchbay: another Patchbay \(pid \d+, such as a running npm start\) holds the embedded PostgreSQL in \S+, which one process at a time can use: stop it, give this command its own DATA_DIR, or run both on one PostgreSQL server with DATABASE_URL$/,
      );
      expect(server.exitCode).toBeNull();
    } finally {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
  });

  it('explains usage for a missing argument or an unknown command', async () => {
    expect((await patchbay(['run', 'do something'], env)).code).toBe(2);
    const unknown = await patchbay(['launch'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown command "launch"');
    expect((await patchbay(['help'], env)).stdout).toContain('patchbay demo');
  });
});
