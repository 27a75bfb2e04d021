import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { allowanceRefusal, allowanceRules } from '../../sandbox/egress-allowance.ts';
import { authorize, type EgressBlock } from '../../sandbox/egress-authorize.ts';
import { parseEgressAllow, type EgressRule } from '../../sandbox/egress-policy.ts';
import { parseEgressAllowReply } from '../../src/core/egress-allow.ts';

// Pure decisions: nothing here resolves a name or opens a socket.
describe('what a thread may never allow', () => {
  const cases: Array<[host: string, refused: RegExp | undefined]> = [
    ['registry.example.com', undefined],
    ['Files.Example.org.', undefined],
    ['10.1.2.3', /10\.1\.2\.3 is a private address/],
    ['127.0.0.1', /a loopback address/],
    ['[::1]', /\[::1\] is a loopback address/],
    ['169.254.169.254', /a link-local address/],
    ['::ffff:169.254.169.254', /a link-local address/],
    ['fd00:ec2::254', /a private address/],
    ['0.0.0.0', /a reserved address/],
    ['8.8.8.8', /an IP address: only host names/],
    ['2130706433', /reads as an IP address/],
    ['0x7f.1', /reads as an IP address/],
    ['0x7f000001', /reads as an IP address/],
    ['localhost', /single-label/],
    ['metadata', /single-label/],
    ['db.localhost', /local name \(\.localhost\)/],
    ['printer.local', /local name/],
    ['metadata.google.internal', /local name \(\.internal\)/],
    ['router.home.arpa', /local name/],
    ['*.example.com', /wildcard/],
    ['not a host', /is not a host name/],
    ['patchbay.example.com', /Patchbay's own server or database/],
  ];
  it.each(cases)('%s', (host, refused) => {
    const refusal = allowanceRefusal(host, 443, ['patchbay.example.com']);
    if (refused) expect(refusal).toMatch(refused);
    else expect(refusal).toBeUndefined();
  });

  it('refuses ports that are not ports', () => {
    expect(allowanceRefusal('registry.example.com', 0)).toMatch(/not a port/);
    expect(allowanceRefusal('registry.example.com', 70000)).toMatch(/not a port/);
  });

  it('makes exact-name rules only, dropping anything a stored list should not hold', () => {
    expect(
      allowanceRules([{ host: 'A.example.com', port: 8443 }, { host: 'b.example.com' }, { host: '10.0.0.1' }]),
    ).toEqual([
      { kind: 'domain', domain: 'a.example.com', wildcard: false, port: 8443 },
      { kind: 'domain', domain: 'b.example.com', wildcard: false },
    ]);
  });
});

describe('the written allow', () => {
  it.each([
    ['allow registry.example.com for this session', { host: 'registry.example.com', scope: 'session' }],
    ['Allow files.example:8443 for this repository.', { host: 'files.example', port: 8443, scope: 'repository' }],
    ['allow `x.example` for the repo', { host: 'x.example', scope: 'repository' }],
    ['allow [::1]:80 for this session', { host: '[::1]', port: 80, scope: 'session' }],
  ])('%s', (text, parsed) => expect(parseEgressAllowReply(text)).toEqual(parsed));

  it.each(['allow it', 'please allow x.example for this session', 'allow x.example for everyone'])('not %s', (text) =>
    expect(parseEgressAllowReply(text)).toBeUndefined(),
  );
});

describe('the proxy with the hosts people allowed', () => {
  const policy = { rules: parseEgressAllow('none'), protectedEndpoints: [{ host: '192.0.2.10' }] };
  const gateFor = (address: string, allowed: EgressRule[]) => {
    const blocks: EgressBlock[] = [];
    const gate = {
      resolve: async () => [{ address, family: address.includes(':') ? 6 : 4 }],
      reported: new Set<string>(),
      log: pino({ level: 'silent' }),
      onBlocked: (block: EgressBlock) => blocks.push(block),
      allowed: async () => allowed,
    };
    return { gate, blocks };
  };
  const allowedName: EgressRule[] = [{ kind: 'domain', domain: 'pkg.example.com', wildcard: false, port: 443 }];

  it('lets an allowed name through to a public address', async () => {
    const { gate, blocks } = gateFor('93.184.215.14', allowedName);
    expect(await authorize(gate, 'pkg.example.com', 443, policy)).toMatchObject({ ok: true, address: '93.184.215.14' });
    expect(blocks).toEqual([]);
  });

  it.each([
    ['10.0.0.7', 'private'],
    ['127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['192.0.2.10', 'patchbay'],
  ])('still refuses an allowed name that resolves to %s (%s)', async (address, reason) => {
    const { gate, blocks } = gateFor(address, allowedName);
    const decision = await authorize(gate, 'pkg.example.com', 443, policy);
    expect(decision).toMatchObject({ ok: false, status: 403 });
    expect(decision.ok === false && decision.message).toContain('cannot be allowed from a thread');
    expect(blocks).toEqual([{ host: 'pkg.example.com', port: 443, reason }]);
  });

  it('refuses another port, another name, and ignores address and wildcard rules it was handed', async () => {
    const smuggled: EgressRule[] = [
      ...allowedName,
      { kind: 'address', address: '10.0.0.7', port: 443 },
      { kind: 'domain', domain: 'example.org', wildcard: true },
    ];
    const { gate } = gateFor('10.0.0.7', smuggled);
    expect(await authorize(gate, 'pkg.example.com', 8443, policy)).toMatchObject({ ok: false, status: 403 });
    expect(await authorize(gate, 'a.example.org', 443, policy)).toMatchObject({ ok: false, status: 403 });
    expect(await authorize(gate, '10.0.0.7', 443, policy)).toMatchObject({ ok: false, status: 403 });
  });
});
