import type { Logger } from 'pino';

/**
 * The Modal SDK's logger interface (`debug/info/warn/error(message, ...keyValuePairs)`) on a pino
 * child, so its lines land in Patchbay's log with the rest. Its warning about the insecure channel
 * to a loopback command router (only ever a test server) is kept at debug.
 */
export function modalLogger(log: Logger) {
  const child = log.child({ component: 'modal-sdk' });
  const fields = (args: unknown[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i + 1 < args.length; i += 2)
      out[String(args[i])] = args[i + 1] instanceof Error ? String(args[i + 1]) : args[i + 1];
    return out;
  };
  return {
    debug: (message: string, ...args: unknown[]) => child.debug(fields(args), message),
    info: (message: string, ...args: unknown[]) => child.info(fields(args), message),
    warn: (message: string, ...args: unknown[]) =>
      /insecure TLS/.test(message) ? child.debug(fields(args), message) : child.warn(fields(args), message),
    error: (message: string, ...args: unknown[]) => child.error(fields(args), message),
  };
}
