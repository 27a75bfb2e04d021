import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/** `patchbay doctor` run from `cwd` with only `env` (and PATH, HOME) in its environment. */
async function doctor(cwd: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [cli, 'doctor'], {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), ...env },
      timeout: 60_000,
    });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

/** The configuration row of the doctor's table. */
const configurationRow = (out: string) => out.split('\n').find((line) => / configuration /.test(line)) ?? out;

describe('settings in .env, read by every command under the real environment', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'patchbay-env-file-'));
    await writeFile(
      join(dir, '.env'),
      [
        '# Patchbay on this host',
        'MODEL_PROVIDER=scripted',
        'SCRIPTED_SCENARIO=/dev/null',
        'PUBLIC_URL="https://patchbay.example.com"',
        `DATA_DIR=${join(dir, 'data')}`,
        '',
      ].join('\n'),
    );
    await writeFile(join(dir, 'other.env'), 'PUBLIC_URL=https://other.example.com\n');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads .env in the working directory', { timeout: 60_000 }, async () => {
    const { out } = await doctor(dir, {});
    expect(configurationRow(out)).toMatch(/✓ configuration +valid; .*PUBLIC_URL https:\/\/patchbay\.example\.com/);
  });

  it('lets the real environment win over the file', { timeout: 60_000 }, async () => {
    const { out } = await doctor(dir, { PUBLIC_URL: 'https://real.example.com' });
    expect(configurationRow(out)).toMatch(/PUBLIC_URL https:\/\/real\.example\.com/);
  });

  it('reads the file PATCHBAY_ENV_FILE names instead, and refuses one that is missing', {
    timeout: 60_000,
  }, async () => {
    const named = await doctor(dir, {
      PATCHBAY_ENV_FILE: 'other.env',
      MODEL_PROVIDER: 'scripted',
      SCRIPTED_SCENARIO: '/dev/null',
      DATA_DIR: join(dir, 'data'),
    });
    expect(configurationRow(named.out)).toMatch(/PUBLIC_URL https:\/\/other\.example\.com/);
    const missing = await doctor(dir, { PATCHBAY_ENV_FILE: 'nowhere.env' });
    expect(missing.code).toBe(1);
    expect(missing.out).toBe(`patchbay: PATCHBAY_ENV_FILE ${join(dir, 'nowhere.env')} cannot be read\n`);
  });
});
