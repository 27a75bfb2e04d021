import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';

const read = (name: string) => readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8');

/**
 * The container files, read (this machine has no container engine to build them with): what the
 * image sets must be settings Patchbay accepts and mean what the comments say, the build context
 * must leave out the data directory and secrets, and compose must hand every setting to the servers.
 */
describe('the Dockerfile, .dockerignore and docker-compose.yml', () => {
  it("the image's settings parse, and show /usr/local (the image's node and npm) in the sandbox", () => {
    const env = Object.fromEntries(
      [...read('Dockerfile').matchAll(/^ENV (.+)$/gm)].flatMap((m) =>
        m[1]!
          .trim()
          .split(/\s+/)
          .map((pair) => pair.split('=') as [string, string]),
      ),
    );
    expect(env).toMatchObject({ DATA_DIR: '/data', SANDBOX_USR_LOCAL: 'true' });
    const config = loadConfig(env);
    expect(config.sandbox.usrLocal).toBe(true);
    expect(config.dataDir).toBe('/data');
  });

  it('the build context leaves out the default data directory (the embedded database and its credentials), .env, node_modules and .git', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining([basename(loadConfig({}).dataDir), '.env', 'node_modules', '.git']));
  });

  it('every Patchbay service in compose reads the whole .env (env_file), not a hand-picked list', () => {
    const compose = read('docker-compose.yml');
    const services = [...compose.matchAll(/command: \["node", "src\/cli\.ts", "(\w+)"\]\n((?: {2,4}\w.*\n)+)/g)].map(
      (m) => ({ role: m[1], body: m[2]! }),
    );
    expect(services.map((s) => s.role).sort()).toEqual(['api', 'worker']);
    for (const service of services) expect(service.body, service.role).toContain('env_file: *patchbay-env-file');
    expect(compose).toMatch(/x-patchbay-env-file: &patchbay-env-file\n {2}- path: \.env\n {4}required: false/);
  });
});
