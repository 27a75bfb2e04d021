import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { PatchbayError } from '../../src/core/errors.ts';

describe('loadConfig', () => {
  it('fills defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      publicUrl: 'http://localhost:3000',
      logLevel: 'info',
      model: { provider: 'scripted' },
      sandbox: { kind: 'local', network: 'proxy', ttlMinutes: 1440 },
      worker: { concurrency: 2, heartbeatSeconds: 30 },
    });
    expect(config.databaseUrl).toBeUndefined();
    expect(config.apiToken).toBeUndefined();
    expect(config.dataDir).toMatch(/\.patchbay$/);
  });

  it('reads the values given, treating empty strings as unset', () => {
    const config = loadConfig({
      PORT: '8080',
      PUBLIC_URL: 'https://patchbay.example.com/',
      DATABASE_URL: 'postgres://u@db:5432/patchbay',
      PATCHBAY_API_TOKEN: 'a-long-enough-token',
      SANDBOX: 'unsafe-local',
      SANDBOX_NETWORK: 'host',
      MODEL_PROVIDER: 'anthropic',
      MODEL: 'claude-sonnet-4-6',
      ANTHROPIC_API_KEY: 'sk-ant-test',
      LOG_LEVEL: '',
    });
    expect(config).toMatchObject({
      port: 8080,
      publicUrl: 'https://patchbay.example.com',
      databaseUrl: 'postgres://u@db:5432/patchbay',
      apiToken: 'a-long-enough-token',
      sandbox: { kind: 'unsafe-local', network: 'host' },
      model: { provider: 'anthropic', model: 'claude-sonnet-4-6', apiKey: 'sk-ant-test' },
      logLevel: 'info',
    });
  });

  it('reads the sandbox limits, with defaults', () => {
    expect(loadConfig({}).sandbox).toMatchObject({
      limits: { maxProcs: 512, memoryMb: 3072, cpuSeconds: 600, fileMb: 4096, diskMb: 10240, tmpMb: 1024 },
      limitMode: 'auto',
      diskQuota: 'auto',
      usrLocal: false,
    });
    const config = loadConfig({
      SANDBOX_MAX_PROCS: '128',
      SANDBOX_MEMORY_MB: '1024',
      SANDBOX_DISK_MB: '500',
      SANDBOX_LIMITS: 'rlimit',
      SANDBOX_DISK_QUOTA: 'watch',
      SANDBOX_USR_LOCAL: 'true',
    });
    expect(config.sandbox).toMatchObject({
      limits: { maxProcs: 128, memoryMb: 1024, diskMb: 500 },
      limitMode: 'rlimit',
      diskQuota: 'watch',
      usrLocal: true,
    });
    expect(() => loadConfig({ SANDBOX_MAX_PROCS: '2' })).toThrow(/SANDBOX_MAX_PROCS/);
    expect(() => loadConfig({ SANDBOX_DISK_QUOTA: 'xfs' })).toThrow(/SANDBOX_DISK_QUOTA/);
  });

  it('fails with one line per bad or missing value, naming each variable', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        SANDBOX: 'docker',
        PATCHBAY_API_TOKEN: 'short',
        MODEL_PROVIDER: 'gpt',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PatchbayError);
    const lines = (error as PatchbayError).message.split('\n');
    expect(lines[0]).toBe('Invalid configuration:');
    expect(
      lines
        .slice(1)
        .map((l) => l.trim().split(':')[0])
        .sort(),
    ).toEqual(['DATABASE_URL', 'MODEL_PROVIDER', 'PATCHBAY_API_TOKEN', 'PORT', 'SANDBOX']);
    expect((error as PatchbayError).code).toBe('config_invalid');
  });

  it('lets SANDBOX_NETWORK=host start only with PATCHBAY_API_TOKEN', () => {
    expect(() => loadConfig({ SANDBOX_NETWORK: 'host' })).toThrow(/SANDBOX_NETWORK=host .*set PATCHBAY_API_TOKEN/);
    expect(loadConfig({ SANDBOX_NETWORK: 'host', PATCHBAY_API_TOKEN: 'a-long-enough-token' }).sandbox.network).toBe(
      'host',
    );
    expect(loadConfig({ SANDBOX_NETWORK: 'none' }).sandbox.network).toBe('none');
  });

  it('reads the egress allowlist, with the GitHub git host in the default', () => {
    const defaults = loadConfig({ GITHUB_GIT_URL: 'https://ghe.example.com:8443' }).sandbox.egress.allow;
    expect(defaults).toContainEqual({ kind: 'domain', domain: 'registry.npmjs.org', wildcard: false });
    expect(defaults).toContainEqual({ kind: 'domain', domain: 'ghe.example.com', wildcard: false, port: 8443 });
    const custom = loadConfig({ SANDBOX_EGRESS_ALLOW: '*.corp.example, 10.1.2.3:8080' }).sandbox.egress.allow;
    expect(custom).toEqual([
      { kind: 'domain', domain: 'corp.example', wildcard: true },
      { kind: 'address', address: '10.1.2.3', port: 8080 },
    ]);
    expect(() => loadConfig({ SANDBOX_EGRESS_ALLOW: 'https://x.example/' })).toThrow(
      /SANDBOX_EGRESS_ALLOW: "https:\/\/x.example\/"/,
    );
  });

  it('takes each SANDBOX_SECRETS value from the variable it names, and says which one is missing', () => {
    const secrets = JSON.stringify({
      npm: { url: 'https://npm.corp.example/', header: 'Authorization', env: 'NPM_TOKEN', prefix: 'Bearer ' },
    });
    expect(loadConfig({ SANDBOX_SECRETS: secrets, NPM_TOKEN: 'tok' }).sandbox.egress.secrets).toEqual([
      { name: 'npm', url: 'https://npm.corp.example/', header: 'Authorization', value: 'Bearer tok' },
    ]);
    expect(() => loadConfig({ SANDBOX_SECRETS: secrets })).toThrow(
      'SANDBOX_SECRETS.npm: the environment variable NPM_TOKEN is not set',
    );
    expect(() => loadConfig({ SANDBOX_SECRETS: '{"npm": {"url": "ftp://x"}}', NPM_TOKEN: 'tok' })).toThrow(
      /SANDBOX_SECRETS\.npm\.url/,
    );
  });

  it('binds a SANDBOX_SECRETS entry to the methods and path prefixes it names, and refuses prefixes that could climb', () => {
    const entry = { url: 'https://r.example/', header: 'Authorization', env: 'T' };
    const bound = JSON.stringify({ npm: { ...entry, methods: ['GET', 'HEAD', 'PUT'], paths: ['/api/npm/'] } });
    expect(loadConfig({ SANDBOX_SECRETS: bound, T: 'tok' }).sandbox.egress.secrets).toEqual([
      {
        name: 'npm',
        url: 'https://r.example/',
        header: 'Authorization',
        value: 'tok',
        methods: ['GET', 'HEAD', 'PUT'],
        paths: ['/api/npm/'],
      },
    ]);
    for (const paths of [['/api/../admin/'], ['api/'], ['/api/..;/x/'], ['/a//b/'], ['/%2e%2e/']]) {
      expect(() => loadConfig({ SANDBOX_SECRETS: JSON.stringify({ npm: { ...entry, paths } }), T: 'tok' })).toThrow(
        /SANDBOX_SECRETS\.npm\.paths\.0/,
      );
    }
    expect(() =>
      loadConfig({ SANDBOX_SECRETS: JSON.stringify({ npm: { ...entry, methods: ['CONNECT'] } }), T: 'tok' }),
    ).toThrow(/SANDBOX_SECRETS\.npm\.methods/);
  });
});
