import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import type { FakeModal } from '../../fakes/modal/fake-modal.ts';
import { outboundAllowed } from '../../fakes/modal/fake-modal-limits.ts';
import { modalSandboxRecord, startModalBackend, type ModalBackend } from '../../helpers/modal-patchbay.ts';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import { changelogRequester } from '../../harness/changelog-scenario.ts';

const npm = { host: 'registry.npmjs.org', address: '104.16.0.35' };
const elsewhere = { host: 'exfiltrate.example.com', address: '93.184.215.14' };
const byAddress = { address: '140.82.112.3' };

describe("Modal's outbound network policy, as the fake holds it", () => {
  it.each([
    ['no policy (OPEN)', undefined, elsewhere, true],
    ['OPEN', { networkAccessType: 1 }, byAddress, true],
    ['BLOCKED', { networkAccessType: 2 }, npm, false],
    ['a listed domain', { networkAccessType: 3, allowedDomains: ['registry.npmjs.org'], allowedCidrs: [] }, npm, true],
    [
      'a listed domain, any case, trailing dot',
      { networkAccessType: 3, allowedDomains: ['registry.npmjs.org'] },
      { host: 'Registry.NPMJS.org.', address: '104.16.0.35' },
      true,
    ],
    [
      'an unlisted domain',
      { networkAccessType: 3, allowedDomains: ['registry.npmjs.org'], allowedCidrs: [] },
      elsewhere,
      false,
    ],
    [
      'a subdomain of a wildcard',
      { networkAccessType: 3, allowedDomains: ['*.githubusercontent.com'] },
      { host: 'raw.githubusercontent.com', address: '185.199.108.133' },
      true,
    ],
    [
      'the wildcard domain itself',
      { networkAccessType: 3, allowedDomains: ['*.githubusercontent.com'] },
      { host: 'githubusercontent.com', address: '185.199.108.133' },
      false,
    ],
    [
      'a look-alike of a wildcard',
      { networkAccessType: 3, allowedDomains: ['*.githubusercontent.com'] },
      { host: 'evilgithubusercontent.com', address: '185.199.108.133' },
      false,
    ],
    [
      'an address with domains only (no CIDRs)',
      { networkAccessType: 3, allowedDomains: ['github.com'], allowedCidrs: [] },
      byAddress,
      false,
    ],
    ['an address inside a CIDR', { networkAccessType: 3, allowedCidrs: ['140.82.112.0/20'] }, byAddress, true],
    ['an address outside a CIDR', { networkAccessType: 3, allowedCidrs: ['140.82.128.0/20'] }, byAddress, false],
    [
      'an IPv6 address inside a CIDR',
      { networkAccessType: 3, allowedCidrs: ['2606:50c0::/32'] },
      { address: '2606:50c0:8000::154' },
      true,
    ],
    ['an IPv4 address against an IPv6 CIDR', { networkAccessType: 3, allowedCidrs: ['::/0'] }, byAddress, false],
  ])('%s', (_name, access, target, allowed) => {
    expect(outboundAllowed(access, target)).toBe(allowed);
  });
});

/**
 * What the sandboxes Patchbay creates on Modal may reach, by the policy the fake recorded from the
 * SDK's SandboxCreateV2 (SANDBOX_NETWORK=proxy with the default SANDBOX_EGRESS_ALLOW, and none):
 * the package registries of the allowlist, nothing else, and nothing at all with no network.
 */
describe('the network of a sandbox Patchbay makes on Modal', () => {
  let fake: FakeModal;
  let modal: ModalBackend;
  let app: PatchbayFixture;

  beforeAll(async () => {
    modal = await startModalBackend();
    fake = modal.fake;
    // The default allowlist, as a server started with no SANDBOX_EGRESS_ALLOW has (the test fixture's is none).
    app = await modal.startPatchbay({
      model: createScriptedProvider({ scenario: () => ({ text: 'nothing' }) }),
      env: { SANDBOX_EGRESS_ALLOW: 'default' },
    });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await modal.close();
  });

  const sandboxFor = async (id: string, network: 'proxy' | 'none') => {
    await app.store.create({
      id,
      repo: 'https://github.com/acme/app',
      prompt: 'p',
      title: 't',
      requester: changelogRequester,
      thread: { source: 'web' },
    });
    const sandbox = await app.sandboxes!.acquire(id, { network });
    await sandbox.release();
    return (await modalSandboxRecord(app, id)).sandbox_id!;
  };

  it('lets out only what the allowlist names, and nothing with no network; the fake records what it blocked', {
    timeout: 60_000,
  }, async () => {
    const proxied = await sandboxFor('net-proxy', 'proxy');
    expect(fake.connect(proxied, npm)).toBe(true);
    expect(fake.connect(proxied, { host: 'pypi.org', address: '151.101.0.223' })).toBe(true);
    expect(fake.connect(proxied, elsewhere)).toBe(false);
    expect(fake.connect(proxied, byAddress)).toBe(false);
    const offline = await sandboxFor('net-none', 'none');
    expect(fake.connect(offline, npm)).toBe(false);
    expect(fake.refusals.splice(0)).toEqual([
      `outbound: ${proxied} may not connect to exfiltrate.example.com (93.184.215.14)`,
      `outbound: ${proxied} may not connect to 140.82.112.3 (140.82.112.3)`,
      `outbound: ${offline} may not connect to registry.npmjs.org (104.16.0.35)`,
    ]);
  });
});
