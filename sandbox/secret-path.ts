/** A secrets-route path as it will be forwarded, or why it is refused. */
export type SecretPath = { ok: true; path: string } | { ok: false; reason: string };

/** Methods that read: a secret is bound to these unless the operator binds more (SANDBOX_SECRETS `methods`). */
export const READ_METHODS: readonly string[] = ['GET', 'HEAD'];

/**
 * The path under a secret's base, normalised the way the most permissive upstream would read it,
 * so what is checked is what arrives: percent-encodings decoded (an encoded `/` or `\`
 * is a separator; what is still encoded after one decoding is refused), backslashes read as
 * separators, path parameters dropped (`..;/` is `../` to Tomcat-based registries such as
 * Artifactory), doubled separators collapsed and dot segments resolved. A path that climbs above
 * the base is refused; the rest is forwarded in this one canonical form. Pure.
 */
export function normalizeSecretPath(raw: string): SecretPath {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  const control = /[\u0000-\u001f\u007f]/;
  if (control.test(raw)) return { ok: false, reason: 'control characters are not allowed' };
  const segments: string[] = [];
  for (const piece of raw.split(/[/\\]/)) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(piece);
    } catch {
      return { ok: false, reason: `${JSON.stringify(piece)} is not valid percent-encoding` };
    }
    if (/%[0-9a-f]{2}/i.test(decoded)) return { ok: false, reason: 'doubly encoded characters are not allowed' };
    if (control.test(decoded)) return { ok: false, reason: 'encoded control characters are not allowed' };
    for (const part of decoded.split(/[/\\]/)) {
      const segment = part.split(';', 1)[0]!;
      if (segment === '' || segment === '.') continue;
      if (segment === '..') {
        if (segments.pop() === undefined) return { ok: false, reason: "it climbs above the secret's base path" };
        continue;
      }
      segments.push(segment);
    }
  }
  const trailing = /(?:[/\\]|%2f|%5c)$/i.test(raw) && segments.length > 0;
  return { ok: true, path: `/${segments.map(encodeSegment).join('/')}${trailing ? '/' : ''}` };
}

/** Whether a normalised path lies under one of the bound prefixes (each normalised, `/` the whole base). */
export function withinPrefixes(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => {
    const base = prefix.endsWith('/') ? prefix : `${prefix}/`;
    return path === prefix || path === base.slice(0, -1) || path.startsWith(base);
  });
}

/** A path prefix as the operator wrote it, in the same canonical form, or undefined when it is not one. */
export function normalizePrefix(prefix: string): string | undefined {
  if (!prefix.startsWith('/')) return undefined;
  const normalized = normalizeSecretPath(prefix);
  if (!normalized.ok) return undefined;
  return normalized.path;
}

/** One segment percent-encoded, keeping the characters a path segment may hold as they are (`@scope`, `a:b`). */
function encodeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(/%(40|3A|24|26|2B|2C|3D)/gi, (match) => decodeURIComponent(match));
}
