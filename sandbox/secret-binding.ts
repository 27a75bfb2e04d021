import { normalizeSecretPath, READ_METHODS, withinPrefixes } from './secret-path.ts';

/** The part of a SANDBOX_SECRETS route its binding is read from. */
type Binding = { methods?: readonly string[] | undefined; paths?: readonly string[] | undefined };

/**
 * Whether one request may carry a brokered secret, and the canonical path it is forwarded with
 *. A secret is bound to methods (GET and HEAD unless the operator names more) and to
 * path prefixes under its URL (`/` unless named): any other method is refused with 405, a path
 * that normalises outside the prefixes with 403. A method that writes (anything but GET, HEAD,
 * OPTIONS) is refused with 403 unless a person approved the command that sends it (`writeGranted`).
 * Pure.
 */
export function secretRequestRefusal(
  route: Binding,
  method: string,
  rawPath: string,
  writeGranted: boolean,
): { ok: true; path: string } | { ok: false; status: 400 | 403 | 405; reason: string } {
  const methods = route.methods ?? READ_METHODS;
  const verb = method.toUpperCase();
  if (!methods.includes(verb))
    return { ok: false, status: 405, reason: `it is bound to ${methods.join(', ')}, not ${verb}` };
  if (!['GET', 'HEAD', 'OPTIONS'].includes(verb) && !writeGranted)
    return {
      ok: false,
      status: 403,
      reason: `${verb} writes with the secret, which only a command a person approved as publishing may do`,
    };
  const normalized = normalizeSecretPath(rawPath);
  if (!normalized.ok) return { ok: false, status: 400, reason: `the path is refused: ${normalized.reason}` };
  const prefixes = route.paths ?? ['/'];
  if (!withinPrefixes(normalized.path, prefixes))
    return {
      ok: false,
      status: 403,
      reason: `${normalized.path} is outside the paths it is bound to (${prefixes.join(', ')})`,
    };
  return { ok: true, path: normalized.path };
}
