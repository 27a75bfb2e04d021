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

  it('builds the image once, for every Patchbay service, and never pulls it', () => {
    const compose = read('docker-compose.yml');
    expect([...compose.matchAll(/^ +build: /gm)]).toHaveLength(1);
    expect(compose).toMatch(/\n {2}api:\n {4}image: patchbay:local\n {4}build: \.\n/);
    expect(compose).toMatch(/x-worker: &worker\n {2}image: patchbay:local\n(?: {2}#.*\n)? {2}pull_policy: never\n/);
    expect(compose).toMatch(/\n {2}worker-1:\n {4}<<: \*worker\n/);
    expect(compose).toMatch(/\n {2}worker-2:\n {4}<<: \*worker\n/);
  });

  it('checks the health of every service on the port its process answers /healthz on', () => {
    const compose = read('docker-compose.yml');
    expect(compose).toMatch(/postgres:[\s\S]*?healthcheck:\n {6}test: \["CMD", "pg_isready"/);
    const api = /\n {2}api:\n((?: {4}.*\n)+)/.exec(compose)![1]!;
    expect(api).toMatch(/healthcheck:\n {6}<<: \*healthcheck\n {6}test:/);
    expect(api).toContain(`"fetch('http://127.0.0.1:3000/healthz').then((r) => process.exit(r.ok ? 0 : 1)`);
    const worker = /x-worker: &worker\n((?: {2}.*\n)+)/.exec(compose)![1]!;
    expect(worker).toMatch(/healthcheck:\n {4}<<: \*healthcheck\n {4}test:/);
    const port = /WORKER_HEALTH_PORT: "(\d+)"/.exec(worker)![1];
    expect(worker).toContain(`"fetch('http://127.0.0.1:${port}/healthz').then((r) => process.exit(r.ok ? 0 : 1)`);
    // The worker's port parses as the setting it is.
    expect(loadConfig({ WORKER_HEALTH_PORT: port }).workerHealthPort).toBe(Number(port));
  });

  it("hands the GitHub App's key to every Patchbay service as a mounted secret file, kept out of the image and the repo", () => {
    const override = read('compose.github-app-key.yml');
    expect(override).toMatch(
      /x-github-app-key: &github-app-key\n {2}secrets: \[github-app-key\]\n {2}environment:\n {4}GITHUB_APP_PRIVATE_KEY_PATH: \/run\/secrets\/github-app-key\n/,
    );
    for (const service of ['api', 'worker-1', 'worker-2'])
      expect(override).toContain(`\n  ${service}: *github-app-key\n`);
    expect(override).toMatch(
      /\nsecrets:\n {2}github-app-key:\n {4}file: \$\{GITHUB_APP_KEY_FILE:-\.\/github-app-key\.pem\}\n/,
    );
    expect(read('.dockerignore')).toMatch(/^\*\.pem$/m);
    expect(read('.gitignore')).toMatch(/^github-app-key\.pem$/m);
    // The path setting the override uses is one Patchbay reads the key from.
    const config = loadConfig({
      GITHUB_APP_ID: '1',
      GITHUB_APP_PRIVATE_KEY_PATH: '/run/secrets/github-app-key',
      GITHUB_WEBHOOK_SECRET: 'x',
    });
    expect(config.github?.privateKeyPath).toBe('/run/secrets/github-app-key');
  });
});
