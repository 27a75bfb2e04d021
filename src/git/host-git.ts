import { spawn } from 'node:child_process';
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
  env?: Record<string, string>;
  /** `-c key=value` settings for this one call. */
  config?: Record<string, string>;
};

/** Where git and the helpers it starts (ssh, git-remote-https) are looked up, unless env.PATH says otherwise. */
export const defaultGitPath = '/usr/local/bin:/usr/bin:/bin';

const maxStdoutBytes = 16 * 1024 * 1024;
const stderrTailBytes = 4096;

/**
 * Runs git on the host with a minimal environment: no system or global config (so an operator's
 * ~/.gitconfig, credential helpers or hooks never leak in), no terminal prompts, C locale for stable
 * messages. Resolves with stdout; throws PatchbayError 'git_failed' on a non-zero exit and 'aborted'
 * when the signal fires (the whole process group is killed, helpers included).
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
  };

  return new Promise((resolve, reject) => {
    const child = spawn('git', fullArgs, {
      cwd: options.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Own process group, so an abort also ends ssh / remote helpers git started.
      detached: true,
    });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let settled = false;

    const onAbort = (): void => {
      killGroup(child.pid);
      finish(() => reject(abortedError(args)));
    };
    const finish = (action: () => void): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      action();
    };
    signal.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      if (stdoutBytes >= maxStdoutBytes) return;
      stdout.push(chunk);
      stdoutBytes += chunk.length;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-stderrTailBytes);
    });
    child.on('error', (error) => {
      finish(() => reject(new PatchbayError('git_failed', `Could not start git: ${error.message}`, { cause: error })));
    });
    child.on('close', (code, killedBy) => {
      finish(() => {
        if (code === 0) return resolve(Buffer.concat(stdout).toString('utf8'));
        const status = code === null ? `signal ${killedBy ?? 'unknown'}` : `exit ${code}`;
        const detail = redactCredentials(stderr.trim()) || '(no output)';
        reject(new PatchbayError('git_failed', `${describeCommand(args)} failed (${status}): ${detail}`));
      });
    });
  });
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

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
