import { describe, expect, it } from 'vitest';
import {
  checkEgressAddress,
  checkEgressTarget,
  normalizeHost,
  parseEgressAllow,
  type EgressPolicy,
} from '../../sandbox/egress-policy.ts';
import { classifyIp } from '../../sandbox/ip-address.ts';

// Pure functions on resolved addresses: nothing here opens a socket.
const policy = (allow: string, protectedEndpoints: EgressPolicy['protectedEndpoints'] = []): EgressPolicy => ({
  rules: parseEgressAllow(allow, { githubHost: 'github.com' }),
  protectedEndpoints,
});

describe('egress address check (on resolved addresses)', () => {
  const open = policy('default');
  const cases: Array<[address: string, refusal: string | undefined]> = [
    ['151.101.1.35', undefined],
    ['2a04:4e42::223', undefined],
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:a9fe:a9fe::1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fd00:ec2::254', 'private'],
    ['100.100.100.200', 'private'],
    ['10.0.0.5', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', undefined],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['0.0.0.0', 'reserved'],
    ['::', 'reserved'],
    ['224.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['ff02::1', 'reserved'],
    ['not-an-address', 'reserved'],
    ['0177.0.0.1', 'reserved'],
  ];
  for (const [address, refusal] of cases) {
    it(`${address} → ${refusal ?? 'allowed'}`, () => {
      expect(checkEgressAddress(open, address, 443)).toBe(refusal);
    });
  }

  it('allows a refused range only for an entry naming that exact address and port', () => {
    const exact = policy('127.0.0.1:8080,10.1.2.3:8080,[::1]:9000,169.254.169.254');
    expect(checkEgressAddress(exact, '127.0.0.1', 8080)).toBeUndefined();
    expect(checkEgressAddress(exact, '::ffff:127.0.0.1', 8080)).toBeUndefined();
    expect(checkEgressAddress(exact, '127.0.0.1', 8081)).toBe('loopback');
    expect(checkEgressAddress(exact, '127.0.0.2', 8080)).toBe('loopback');
    expect(checkEgressAddress(exact, '10.1.2.3', 8080)).toBeUndefined();
    expect(checkEgressAddress(exact, '10.1.2.3', 443)).toBe('private');
    expect(checkEgressAddress(exact, '::1', 9000)).toBeUndefined();
    // An address entry without a port does not open a refused range.
    expect(checkEgressAddress(exact, '169.254.169.254', 80)).toBe('link-local');
  });

  it("refuses Patchbay's own endpoints, even on public addresses, unless named exactly", () => {
    const guarded = policy('default,203.0.113.7:5432', [
      { host: '198.51.100.4' },
      { host: '203.0.113.7', port: 5432 },
      { host: 'db.example.org', port: 5432 },
    ]);
    expect(checkEgressAddress(guarded, '198.51.100.4', 443)).toBe('patchbay');
    expect(checkEgressAddress(guarded, '203.0.113.7', 5432)).toBeUndefined();
    expect(
      checkEgressTarget(policy('*.example.org:5432', [{ host: 'db.example.org', port: 5432 }]), 'db.example.org', 5432),
    ).toBe('patchbay');
  });
});

describe('egress allowlist', () => {
  it('defaults to the package registries and the GitHub host, on ports 80 and 443', () => {
    const p = policy('default');
    for (const host of [
      'registry.npmjs.org',
      'pypi.org',
      'files.pythonhosted.org',
      'index.crates.io',
      'proxy.golang.org',
      'repo1.maven.org',
      'deb.debian.org',
      'github.com',
    ]) {
      expect(checkEgressTarget(p, host, 443), host).toBeUndefined();
    }
    expect(checkEgressTarget(p, 'registry.npmjs.org', 80)).toBeUndefined();
    expect(checkEgressTarget(p, 'registry.npmjs.org', 22)).toBe('not-allowed');
    expect(checkEgressTarget(p, 'evil.example', 443)).toBe('not-allowed');
    expect(checkEgressTarget(p, 'npmjs.org.evil.example', 443)).toBe('not-allowed');
  });

  it('matches wildcards on subdomains, ports exactly, and addresses as written', () => {
    const p = policy('*.example.org,git.example.com:8443,10.1.2.3:8080');
    expect(checkEgressTarget(p, 'a.example.org', 443)).toBeUndefined();
    expect(checkEgressTarget(p, 'a.b.example.org', 80)).toBeUndefined();
    expect(checkEgressTarget(p, 'example.org', 443)).toBe('not-allowed');
    expect(checkEgressTarget(p, 'badexample.org', 443)).toBe('not-allowed');
    expect(checkEgressTarget(p, 'git.example.com', 8443)).toBeUndefined();
    expect(checkEgressTarget(p, 'git.example.com', 443)).toBe('not-allowed');
    expect(checkEgressTarget(p, '10.1.2.3', 8080)).toBeUndefined();
    expect(checkEgressTarget(p, '10.1.2.4', 8080)).toBe('not-allowed');
  });

  it('normalizes what the sandbox asks for', () => {
    expect(normalizeHost('Registry.NPMJS.org.')).toBe('registry.npmjs.org');
    expect(normalizeHost('[::FFFF:7f00:1]')).toBe('127.0.0.1');
    expect(normalizeHost('a b')).toBeUndefined();
  });

  it('rejects entries that are not host patterns, naming them', () => {
    expect(() => parseEgressAllow('pypi.org, http://x.org')).toThrow(/"http:\/\/x.org"/);
    expect(() => parseEgressAllow('x.org:99999')).toThrow(/SANDBOX_EGRESS_ALLOW/);
    expect(() => parseEgressAllow('*')).toThrow(/SANDBOX_EGRESS_ALLOW/);
  });

  it('classifies the cloud metadata addresses as never public', () => {
    for (const address of ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '169.254.170.2'])
      expect(classifyIp(address)).not.toBe('public');
  });
});
