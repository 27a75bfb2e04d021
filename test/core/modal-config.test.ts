import { describe, expect, it } from 'vitest';
import { configuredSecrets, loadConfig } from '../../src/config.ts';

describe('SANDBOX=modal settings', () => {
  it('has no Modal settings unless SANDBOX=modal, and fills the defaults with it', () => {
    expect(loadConfig({}).sandbox.modal).toBeUndefined();
    expect(loadConfig({ SANDBOX: 'modal' }).sandbox.modal).toEqual({
      configFile: expect.stringMatching(/\/\.modal\.toml$/),
      appName: 'patchbay',
      image: 'node:22-bookworm-slim',
      dockerfileCommands: [expect.stringMatching(/apt-get install .*git ripgrep python3/), 'RUN mkdir -p /workspace'],
      timeoutMinutes: 120,
      idleTimeoutMinutes: 15,
      snapshotEveryMinutes: 10,
      snapshotTtlDays: 30,
      exitSnapshots: true,
      setupImageRefresh: { everyMinutes: 60, minCommits: 50 },
    });
    // 0 minutes: no background refresh of setup images.
    expect(loadConfig({ SANDBOX: 'modal', MODAL_TEMPLATE_REFRESH_MINUTES: '0' }).sandbox.modal).not.toHaveProperty(
      'setupImageRefresh',
    );
  });

  it('reads every setting; a custom image gets no extra commands; the token secret is redacted', () => {
    const config = loadConfig({
      SANDBOX: 'modal',
      MODAL_TOKEN_ID: 'ak-123',
      MODAL_TOKEN_SECRET: 'as-456',
      MODAL_CONFIG_PATH: '/etc/patchbay/modal.toml',
      MODAL_APP_NAME: 'patchbay-prod',
      MODAL_IMAGE: 'ghcr.io/acme/dev:1',
      MODAL_CPU: '2.5',
      MODAL_MEMORY_MIB: '4096',
      MODAL_SANDBOX_TIMEOUT_MINUTES: '600',
      MODAL_IDLE_TIMEOUT_MINUTES: '30',
      MODAL_SNAPSHOT_EVERY_MINUTES: '0',
      MODAL_SNAPSHOT_TTL_DAYS: '7',
      MODAL_EXIT_SNAPSHOTS: 'false',
      MODAL_TEMPLATE_REFRESH_MINUTES: '15',
      MODAL_TEMPLATE_REFRESH_COMMITS: '200',
    });
    expect(config.sandbox.modal).toEqual({
      configFile: '/etc/patchbay/modal.toml',
      tokenId: 'ak-123',
      tokenSecret: 'as-456',
      appName: 'patchbay-prod',
      image: 'ghcr.io/acme/dev:1',
      dockerfileCommands: [],
      cpu: 2.5,
      memoryMiB: 4096,
      timeoutMinutes: 600,
      idleTimeoutMinutes: 30,
      snapshotEveryMinutes: 0,
      snapshotTtlDays: 7,
      exitSnapshots: false,
      setupImageRefresh: { everyMinutes: 15, minCommits: 200 },
    });
    expect(configuredSecrets(config)).toContain('as-456');
  });

  it.each([
    [{ MODAL_TOKEN_ID: 'ak-123' }, /MODAL_TOKEN_ID and MODAL_TOKEN_SECRET go together/],
    [{ MODAL_TOKEN_ID: 'nope', MODAL_TOKEN_SECRET: 'as-1' }, /MODAL_TOKEN_ID: must be a Modal token id/],
    [{ MODAL_SANDBOX_TIMEOUT_MINUTES: '2000' }, /MODAL_SANDBOX_TIMEOUT_MINUTES/],
    [
      { MODAL_SANDBOX_TIMEOUT_MINUTES: '20', MODAL_IDLE_TIMEOUT_MINUTES: '30' },
      /MODAL_IDLE_TIMEOUT_MINUTES must not exceed MODAL_SANDBOX_TIMEOUT_MINUTES/,
    ],
    [{ MODAL_CPU: '-1' }, /MODAL_CPU/],
    [{ MODAL_MEMORY_MIB: '64' }, /MODAL_MEMORY_MIB/],
    [{ MODAL_APP_NAME: 'has spaces' }, /MODAL_APP_NAME: must be a Modal app name/],
    [{ MODAL_EXIT_SNAPSHOTS: 'yes' }, /MODAL_EXIT_SNAPSHOTS/],
    [{ MODAL_TEMPLATE_REFRESH_MINUTES: '-5' }, /MODAL_TEMPLATE_REFRESH_MINUTES/],
    [{ MODAL_TEMPLATE_REFRESH_MINUTES: 'hourly' }, /MODAL_TEMPLATE_REFRESH_MINUTES/],
    [{ MODAL_TEMPLATE_REFRESH_COMMITS: '0' }, /MODAL_TEMPLATE_REFRESH_COMMITS/],
    [
      {
        SANDBOX_SECRETS: '{"npm": {"url": "https://npm.example.com/", "header": "Authorization", "env": "NPM_TOKEN"}}',
        NPM_TOKEN: 'x',
      },
      /SANDBOX_SECRETS cannot be used with SANDBOX=modal: .*unset SANDBOX_SECRETS, or use SANDBOX=local/,
    ],
  ])('refuses %o with a line naming the setting', (env, message) => {
    expect(() => loadConfig({ SANDBOX: 'modal', ...env })).toThrow(message);
  });
});
