import type { ToolContext, ToolOutput } from './tool.ts';

/** Git never pages, prompts or colours output meant for the model. */
const GIT_ENV = { GIT_PAGER: 'cat', PAGER: 'cat', GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' };

/**
 * Runs `git <args>` (args already shell-quoted) inside the sandbox, in the workspace, for the agent's
 * git tools; a failure becomes an error output. Git with remotes runs on the host (`runHostGit`).
 */
export async function runSandboxGit(ctx: ToolContext, args: string): Promise<ToolOutput> {
  const result = await ctx.sandbox.exec(`git ${args}`, { env: GIT_ENV, timeoutMs: 60_000, signal: ctx.signal });
  if (result.aborted) return { content: 'git aborted.', isError: true };
  if (result.timedOut) return { content: `git ${args} timed out.`, isError: true };
  if (result.exitCode !== 0) {
    return {
      content: `git ${args} failed (exit ${result.exitCode}): ${result.stderr.trim() || result.stdout.trim()}`,
      isError: true,
    };
  }
  return { content: result.stdout };
}
