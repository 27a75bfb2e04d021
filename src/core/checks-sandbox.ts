const suffix = '-checks';

/**
 * The id the checks' own sandbox is acquired under: a workspace of its own beside the session's,
 * which never mounts the agent's workspace.
 */
export function checksSandboxId(sessionId: string): string {
  return `${sessionId}${suffix}`;
}

/**
 * The session a sandbox works for: its own id, or the session whose checks sandbox it is, so the
 * proxy's refusals and the hosts people allowed are the session's in both.
 */
export function sandboxSession(sandboxId: string): string {
  return sandboxId.endsWith(suffix) ? sandboxId.slice(0, -suffix.length) : sandboxId;
}
