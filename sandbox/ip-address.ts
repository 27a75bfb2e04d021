/**
 * IP address parsing and classification for the egress policy. Pure: no DNS, no sockets, so any
 * sandbox provider (local or remote) can apply the same rules to the addresses it resolved.
 */

/** What an address is, as far as egress from a sandbox cares. Only 'public' may be reached by default. */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'reserved';

/** Parses an IPv4 or IPv6 literal (no brackets, no zone) into bytes; undefined when it is not one. */
export function parseIp(text: string): Uint8Array | undefined {
  return parseIpv4(text) ?? parseIpv6(text);
}

/** The canonical text of an address (lower-case IPv6, IPv4-mapped IPv6 as IPv4), for comparisons. */
export function canonicalIp(text: string): string | undefined {
  const bytes = parseIp(text);
  if (!bytes) return undefined;
  const v4 = embeddedIpv4(bytes);
  if (bytes.length === 4 || (v4 && isMapped(bytes))) return (v4 ?? bytes).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups.join(':');
}

/**
 * Classifies an address. IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4, compatible)
 * are judged by the IPv4 address inside, so `::ffff:169.254.169.254` is link-local like the original.
 */
export function classifyIp(text: string): AddressClass {
  const bytes = parseIp(text);
  if (!bytes) return 'reserved';
  if (bytes.length === 4) return classifyIpv4(bytes);
  const v4 = embeddedIpv4(bytes);
  if (v4) return classifyIpv4(v4);
  return classifyIpv6(bytes);
}

function classifyIpv4(b: Uint8Array): AddressClass {
  const [a, c] = [b[0]!, b[1]!];
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && c >= 16 && c <= 31) || (a === 192 && c === 168)) return 'private';
  // Carrier-grade NAT (also where some clouds put their metadata service, e.g. 100.100.100.200).
  if (a === 100 && c >= 64 && c <= 127) return 'private';
  // 169.254.0.0/16 holds the cloud metadata service (169.254.169.254).
  if (a === 169 && c === 254) return 'link-local';
  if (a === 0) return 'reserved';
  if (a === 192 && c === 0 && b[2] === 0) return 'reserved'; // IETF protocol assignments
  if (a === 198 && (c === 18 || c === 19)) return 'reserved'; // benchmarking
  if (a >= 224) return 'reserved'; // multicast, 240/4 and broadcast
  return 'public';
}

function classifyIpv6(b: Uint8Array): AddressClass {
  const isZeroUpTo = (n: number) => b.subarray(0, n).every((x) => x === 0);
  if (isZeroUpTo(15) && b[15] === 1) return 'loopback';
  if (isZeroUpTo(16)) return 'reserved';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return 'private'; // deprecated site-local
  if ((b[0]! & 0xfe) === 0xfc) return 'private'; // unique local (fd00:ec2::254 is a metadata address)
  if (b[0] === 0xff) return 'reserved'; // multicast
  if (b[0] === 0x01 && isZeroUpTo(8)) return 'reserved'; // discard-only 100::/64
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return 'reserved'; // documentation
  // Global unicast is 2000::/3; the rest of the space is unassigned.
  return (b[0]! & 0xe0) === 0x20 ? 'public' : 'reserved';
}

function isMapped(b: Uint8Array): boolean {
  return b.length === 16 && b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
}

/** The IPv4 address an IPv6 address carries, for the forms that route to it. */
function embeddedIpv4(b: Uint8Array): Uint8Array | undefined {
  if (b.length !== 16) return undefined;
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; not :: and ::1, which are IPv6's own).
  if (isMapped(b)) return b.subarray(12);
  if (b.subarray(0, 12).every((x) => x === 0) && (b[12] !== 0 || b[13] !== 0 || b[14] !== 0 || b[15]! > 1))
    return b.subarray(12);
  // 64:ff9b::/96 (NAT64) and 64:ff9b:1::/48 (local NAT64).
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) return b.subarray(12);
  // 2002::/16 (6to4) carries the IPv4 address in bytes 2..5.
  if (b[0] === 0x20 && b[1] === 0x02) return b.subarray(2, 6);
  return undefined;
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    // Strict dotted decimal: no octal (010), hex (0x7f) or short forms (127.1) that some resolvers accept.
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return undefined;
    bytes[i] = Number(part);
  }
  return bytes;
}

function parseIpv6(text: string): Uint8Array | undefined {
  if (!text.includes(':') || text.includes('%')) return undefined;
  let head = text;
  let tailV4: Uint8Array | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tailV4 = parseIpv4(text.slice(lastColon + 1));
    if (!tailV4) return undefined;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const toGroups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = toGroups(halves[0]!);
  const right = halves.length === 2 ? toGroups(halves[1]!) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right];
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const group = groups[i]!;
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  }
  if (tailV4) bytes.set(tailV4, 12);
  return bytes;
}
