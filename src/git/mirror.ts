import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { PatchbayError, isPatchbayError } from '../core/errors.ts';
import { cloneFailure } from './clone-failure.ts';
import { redactCredentials, runHostGit } from './host-git.ts';
import { runRemoteGit } from './remote-git.ts';

/** A repository as the harness was given it: a git URL, or a directory on the host. */
export type RepoSource = { kind: 'url' | 'path'; location: string };

export type Mirror = { source: RepoSource; gitDir: string };

export type MirrorDeps = {
  dataDir: string;
  log: Logger;
  signal: AbortSignal;
  /** Extra environment for network git calls (for example credentials through GIT_ASKPASS). */
  env?: Record<string, string>;
};

const urlPattern = /^[a-z][a-z0-9+.-]*:\/\//i;
// scp-like syntax (git@github.com:owner/repo.git): a colon before the first slash.
const scpPattern = /^[^/:]{2,}:/;

/** Local remotes (tests, on-host repos) need the file protocol; submodules are never followed. */
export const mirrorGitConfig = { 'protocol.file.allow': 'always', 'protocol.ext.allow': 'never' };

export function resolveRepo(repo: string): RepoSource {
  const trimmed = repo.trim();
  if (trimmed.length === 0) throw new PatchbayError('invalid_input', 'Repository must not be empty');
  const refusal = repoUrlRefusal(trimmed);
  if (refusal)
    throw new PatchbayError(
      'invalid_input',
      `${JSON.stringify(trimmed.slice(0, 200))} is not a repository: ${refusal}. ${REPO_FORMS}`,
    );
  if (/^file:\/\//i.test(trimmed)) return { kind: 'path', location: fileURLToPath(trimmed) };
  if (urlPattern.test(trimmed) || scpPattern.test(trimmed)) return { kind: 'url', location: trimmed };
  return { kind: 'path', location: resolve(trimmed) };
}

const REPO_FORMS = 'Use https://host/owner/repo, ssh://git@host/owner/repo or git@host:owner/repo';

/**
 * Why a repository text that looks like a URL must not reach git, if so. Git reads `fd::17` and
 * `ext::cmd` as transport helpers (a clone that waits on a file descriptor forever, or runs a
 * command), and any other scheme starts a remote helper too, so only https, ssh, git@ (scp form),
 * file (a local path) and plain http to loopback (a local git server) are taken. Pure.
 */
export function repoUrlRefusal(text: string): string | undefined {
  if (/^[A-Za-z0-9][A-Za-z0-9+.-]*::/.test(text)) return 'git transport helpers (fd::, ext::) are not accepted';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(text)) return 'it contains control characters';
  if (urlPattern.test(text)) {
    const scheme = text.slice(0, text.indexOf(':')).toLowerCase();
    if (scheme === 'file') return /\s/.test(text) ? 'a URL has no spaces' : undefined;
    if (scheme === 'https' || scheme === 'ssh')
      return /\s/.test(text) ? 'a URL has no spaces' : namesNoRepository(text);
    if (scheme === 'http' && isLoopbackUrl(text)) return namesNoRepository(text);
    return scheme === 'http'
      ? 'plain http:// is accepted only for a git server on this machine (loopback)'
      : `${scheme}:// is not accepted`;
  }
  if (scpPattern.test(text) && !scpUrl.test(text)) return 'the only host:path form accepted is user@host:owner/repo';
  return undefined;
}

/** Why a network URL names no repository (`https://`, `https://github.com/`), if so. */
function namesNoRepository(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'it is not a complete URL';
  }
  if (!url.hostname) return 'it names no host';
  return url.pathname.replace(/\/+/g, '') === '' ? 'it names a host but no repository (owner/repo)' : undefined;
}

// git@github.com:owner/repo.git: a user, a host name, a colon, and a path that is no second colon.
const scpUrl = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^:\s][^\s]*$/;

function isLoopbackUrl(text: string): boolean {
  try {
    const host = new URL(text).hostname.toLowerCase();
    return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

/** The cache key: same repository, same mirror, whatever the spelling of its URL or credentials. */
export function normalizeRepo(source: RepoSource): string {
  if (source.kind === 'path') return source.location.replace(/\/+$/, '') || '/';
  let text = source.location.replace(/\/+$/, '').replace(/\.git$/i, '');
  const url = urlPattern.test(text) ? safeUrl(text) : undefined;
  if (url) {
    url.username = '';
    url.password = '';
    text = `${url.protocol}//${url.host}${url.pathname}`.replace(/\/+$/, '');
  } else if (scpPattern.test(text)) {
    const colon = text.indexOf(':');
    text = `${text.slice(0, colon).toLowerCase()}${text.slice(colon)}`;
  }
  return text;
}

export function mirrorPath(dataDir: string, source: RepoSource): string {
  const key = createHash('sha256').update(normalizeRepo(source)).digest('hex').slice(0, 16);
  return join(dataDir, 'mirrors', `${key}.git`);
}

/** What to show of a repository in messages: never credentials. */
export function describeRepo(source: RepoSource): string {
  return redactCredentials(source.location);
}

const chains = new Map<string, Promise<void>>();

/** Runs `fn` after every earlier operation on the same mirror in this process has finished. */
export async function withMirrorLock<T>(gitDir: string, fn: () => Promise<T>): Promise<T> {
  const previous = chains.get(gitDir) ?? Promise.resolve();
  let release!: () => void;
  const done = new Promise<void>((resolveDone) => (release = resolveDone));
  const tail = previous.then(() => done);
  chains.set(gitDir, tail);
  await previous;
  try {
    return await fn();
  } finally {
    release();
    if (chains.get(gitDir) === tail) chains.delete(gitDir);
  }
}

/**
 * Creates the host-side bare mirror of `repo`, or fetches what is new into it. Only branches are
 * mirrored (`+refs/heads/*`, pruned), so the mirror's branches equal the remote's after this call.
 * With `updateHead`, the mirror's HEAD follows the remote's default branch. Call under withMirrorLock.
 */
export async function ensureMirror(repo: string, deps: MirrorDeps & { updateHead?: boolean }): Promise<Mirror> {
  const source = resolveRepo(repo);
  const gitDir = mirrorPath(deps.dataDir, source);
  const mirror = { source, gitDir };
  const base = { signal: deps.signal, env: deps.env, config: mirrorGitConfig };
  if (await exists(join(gitDir, 'HEAD'))) {
    deps.log.debug({ mirror: gitDir }, 'refreshing git mirror');
    await runRemoteGit(['fetch', '--prune', '--quiet', 'origin', '+refs/heads/*:refs/heads/*'], {
      ...base,
      gitDir,
    }).catch((error: unknown) => {
      throw isPatchbayError(error, 'git_failed') ? cloneFailure(describeRepo(source), 'fetch', error) : error;
    });
    if (deps.updateHead) await followRemoteHead(mirror, deps);
    return mirror;
  }
  if (source.kind === 'path' && !(await isDirectory(source.location))) {
    throw new PatchbayError('git_failed', `Repository ${source.location} does not exist or is not a directory`);
  }
  deps.log.info({ repo: describeRepo(source), mirror: gitDir }, 'creating git mirror');
  // Private to the server (see secure-data-dir.ts), whoever makes it first.
  await mkdir(join(deps.dataDir, 'mirrors'), { recursive: true, mode: 0o700 });
  // Clone beside the final path and rename, so a crash never leaves a half-made mirror in place.
  const partial = `${gitDir}.partial-${randomBytes(4).toString('hex')}`;
  try {
    await runRemoteGit(['clone', '--bare', '--quiet', '--', source.location, partial], base);
    await rename(partial, gitDir).catch(async (error: NodeJS.ErrnoException) => {
      // Another process made the mirror meanwhile; use theirs.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      await rm(partial, { recursive: true, force: true });
    });
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    if (source.kind === 'path' && isPatchbayError(error, 'git_failed')) {
      throw new PatchbayError(
        'git_failed',
        `${source.location} is not a git repository: git could not clone it. Check the path; the server's log has git's own message.`,
        { cause: error },
      );
    }
    // What the person is told has no git command, mirror path or code; the cause keeps git's words.
    throw isPatchbayError(error, 'git_failed') ? cloneFailure(describeRepo(source), 'clone', error) : error;
  }
  return mirror;
}

/** The mirror's default branch (its HEAD), or undefined when the repository has no commits. */
export async function defaultBranch(mirror: Mirror, signal: AbortSignal): Promise<string | undefined> {
  let ref: string;
  try {
    ref = (await runHostGit(['symbolic-ref', '--quiet', 'HEAD'], { gitDir: mirror.gitDir, signal })).trim();
  } catch (error) {
    if (isPatchbayError(error, 'git_failed')) return undefined;
    throw error;
  }
  const branch = ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : undefined;
  if (branch === undefined) return undefined;
  return (await resolveBranch(mirror, branch, signal)) ? branch : undefined;
}

/** The commit a branch of the mirror points at, or undefined when there is no such branch. */
export async function resolveBranch(mirror: Mirror, branch: string, signal: AbortSignal): Promise<string | undefined> {
  try {
    const out = await runHostGit(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], {
      gitDir: mirror.gitDir,
      signal,
    });
    return out.trim() || undefined;
  } catch (error) {
    if (isPatchbayError(error, 'git_failed')) return undefined;
    throw error;
  }
}

async function followRemoteHead(mirror: Mirror, deps: MirrorDeps): Promise<void> {
  const out = await runRemoteGit(['ls-remote', '--symref', 'origin', 'HEAD'], {
    gitDir: mirror.gitDir,
    signal: deps.signal,
    env: deps.env,
    config: mirrorGitConfig,
  });
  const match = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(out);
  if (!match?.[1]) return;
  await runHostGit(['symbolic-ref', 'HEAD', `refs/heads/${match[1]}`], { gitDir: mirror.gitDir, signal: deps.signal });
}

function safeUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
