import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeModal, type FakeModal } from './fake-modal.ts';

/**
 * The fake Modal with the `modal` SDK pointed at it. The SDK reads its endpoint and profile file
 * from the environment only, so MODAL_SERVER_URL and MODAL_CONFIG_PATH (a file that does not exist)
 * are set here and put back by `close`. `env()` is Patchbay's own settings for it.
 */
export async function startFakeModalForSdk(): Promise<{
  fake: FakeModal;
  env(): Record<string, string>;
  close(): Promise<void>;
}> {
  const saved = { url: process.env.MODAL_SERVER_URL, config: process.env.MODAL_CONFIG_PATH };
  const fake = await startFakeModal();
  const configDir = await mkdtemp(join(tmpdir(), 'modal-config-'));
  process.env.MODAL_SERVER_URL = fake.url;
  process.env.MODAL_CONFIG_PATH = join(configDir, 'absent.toml');
  return {
    fake,
    env: () => ({
      SANDBOX: 'modal',
      MODAL_TOKEN_ID: fake.tokenId,
      MODAL_TOKEN_SECRET: fake.tokenSecret,
      MODAL_APP_NAME: 'patchbay-test',
    }),
    async close() {
      if (saved.url === undefined) delete process.env.MODAL_SERVER_URL;
      else process.env.MODAL_SERVER_URL = saved.url;
      if (saved.config === undefined) delete process.env.MODAL_CONFIG_PATH;
      else process.env.MODAL_CONFIG_PATH = saved.config;
      await fake.close();
      await rm(configDir, { recursive: true, force: true });
    },
  };
}
