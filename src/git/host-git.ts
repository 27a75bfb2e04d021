import { runProcess } from '../../sandbox/run-process.ts';
import { PatchbayError } from '../core/errors.ts';

export type HostGitOptions = {
  /** Working directory of the git process. */
  cwd?: string;
  /** Passed as `--git-dir`, so git never looks for a repository (or its config) around `cwd`. */
  gitDir?: string;
  signal: AbortSignal;
  /**
   * Added on top of the minimal environment (credentials helpers, a different PATH or HOME).
   * Nothing from the host's environment reaches git unless it is passed here.
   */
  env?: Record<string, string> | undefined;
  /** `-c key=value` settings for this one call. */
  config?: Record<string, string>;
};

/** The transports host-side git may use (GIT_ALLOW_PROTOCOL): mirrors clone from local paths too. */
export const HOST_GIT_PROTOCOLS = 'https:ssh:http:file';

/** Where git and the helpers it starts (ssh, git-remote-https) are looked up, unless env.PATH says otherwise. */
export const defaultGitPath = '/usr/local/bin:/usr/bin:/bin';

const maxStdoutBytes = 16 * 1024 * 1024;
const stderrTailBytes = 4096;

/**
 * Runs git on the host with a minimal environment: no system or global config (so an operator's
 * ~/.gitconfig, credential helpers or hooks never leak in), no terminal prompts, C locale for stable
 * messages. Resolves with stdout; throws PatchbayError 'git_failed' on a non-zero exit and 'aborted'
 * when the signal fires (the whole process group is killed, helpers included: see runProcess, the
 * host process runner the sandbox uses too).
 */
export function runHostGit(args: readonly string[], options: HostGitOptions): Promise<string> {
  const { signal } = options;
  if (signal.aborted) return Promise.reject(abortedError(args));
  const fullArgs: string[] = [];
  for (const [key, value] of Object.entries(options.config ?? {})) fullArgs.push('-c', `${key}=${value}`);
  if (options.gitDir !== undefined) fullArgs.push(`--git-dir=${options.gitDir}`);
  fullArgs.push(...args);
  const env: Record<string, string> = {
    PATH: defaultGitPath,
    HOME: '/nonexistent',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    ...options.env,
    // Last, so no caller's env widens it: git speaks only these (no fd::, ext:: or other remote
    // helpers, for a repository URL, a submodule or a redirect alike).
    GIT_ALLOW_PROTOCOL: HOST_GIT_PROTOCOLS,
  };

  return runProcess({
    file: 'git',
    args: fullArgs,
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    env,
    signal,
    maxOutputBytes: maxStdoutBytes,
    stderrKeeps: 'tail',
    killGroupOnExit: false,
  }).then(
    (result) => {
      if (result.aborted) throw abortedError(args);
      if (result.exitCode === 0) return result.stdout;
      const status = result.exitCode === null ? 'killed by a signal' : `exit ${result.exitCode}`;
      const detail = redactCredentials(result.stderr.slice(-stderrTailBytes).trim()) || '(no output)';
      throw new PatchbayError('git_failed', `${describeCommand(args)} failed (${status}): ${detail}`);
    },
    (error: unknown) => {
      throw new PatchbayError('git_failed', `Could not start git: ${(error as Error).message}`, { cause: error });
    },
  );
}

/** Removes user:password@ from URLs so errors and logs never carry a token. */
export function redactCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@');
}

function describeCommand(args: readonly string[]): string {
  const shown = args.slice(0, 6).join(' ');
  return redactCredentials(`git ${shown}${args.length > 6 ? ' …' : ''}`);
}

function abortedError(args: readonly string[]): PatchbayError {
  return new PatchbayError('aborted', `${describeCommand(args)} was aborted`);
}
