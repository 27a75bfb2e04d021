import { createPrivateKey } from 'node:crypto';
import { App } from '@octokit/app';
import { Octokit } from '@octokit/core';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import { createExpiringTokenCache } from '../../src/git/expiring-token-cache.ts';
import { gitBasicAuthEnv } from '../../src/git/git-auth-env.ts';
import type { GitHubStore } from './github-store.ts';
import { parseRepoUrl, type RepoRef } from '../../src/core/repo-ref.ts';

/**
 * A request whose caller gave up (its signal aborted: a stop, a shutdown) is not retried. Octokit
 * reports an aborted fetch as a 500, which the retry plugin retried three times over 14 s, so a
 * shutdown during a GitHub call waited that long past its grace. Registered before the retry
 * plugin, so its error hook runs first and sets the request's retries to none.
 */
function noRetryOnceAborted(octokit: Octokit): void {
  octokit.hook.error('request', (error, options) => {
    const request = options.request as { signal?: AbortSignal; retries?: number } | undefined;
    if (request?.signal?.aborted) request.retries = 0;
    throw error;
  });
}

/** Octokit with GitHub's recommended retry and rate-limit handling. */
export const PatchbayOctokit = Octokit.plugin(noRetryOnceAborted, retry, throttling);
export type PatchbayOctokit = InstanceType<typeof PatchbayOctokit>;

export type BotIdentity = { slug: string; login: string; mention: string };
type AppInfo = { identity: BotIdentity; permissions: Record<string, string | undefined> };

export type GitHubClient = ReturnType<typeof createGitHubClient>;

/**
 * The GitHub App as Patchbay uses it: the App JWT client, installation clients per repository, the
 * bot's identity (from GET /app), and installation tokens for host-side git, minted per repository
 * with only the permissions git needs and cached until shortly before they expire.
 */
export function createGitHubClient(deps: {
  appId: string;
  privateKey: string;
  apiUrl: string;
  gitUrl: string;
  oauth?: { clientId: string; clientSecret: string };
  store: GitHubStore;
  log: Logger;
}) {
  const { log, store } = deps;
  const Client = octokitClass(deps.apiUrl, log);
  const app = new App({
    appId: deps.appId,
    privateKey: toPkcs8(deps.privateKey),
    Octokit: Client,
    ...(deps.oauth && { oauth: deps.oauth }),
  });

  const readApp = appReader(app);
  const tokens = gitTokenCache(app, readApp);
  const installationId = (repo: RepoRef) => installationOf(app, store, repo);

  return {
    app,
    Client,

    /** The App's handle, from GET /app: `@<slug>`, comments as `<slug>[bot]`. */
    identity(options: { retries?: number } = {}): Promise<BotIdentity> {
      return readApp(options).then((info) => info.identity);
    },

    installationId,
    /** The installation covering a repository; undefined when the App is not installed on it. */
    coveringInstallation: (repo: RepoRef) => coveringInstallation(app, store, repo),

    async forRepo(repo: RepoRef): Promise<PatchbayOctokit> {
      return (await app.getInstallationOctokit(await installationId(repo))) as unknown as PatchbayOctokit;
    },

    forInstallation(id: number): Promise<PatchbayOctokit> {
      return app.getInstallationOctokit(id) as unknown as Promise<PatchbayOctokit>;
    },

    /** An installation token for one repository (to read the images its issues show), cached until near expiry. */
    async repoToken(installationId: number, repo: RepoRef): Promise<string> {
      return (await tokens.get(`${installationId}:${repo.owner}/${repo.repo}`)).token;
    },

    /** A client acting as a user, with their OAuth token. */
    forUser(token: string): PatchbayOctokit {
      return new Client({ auth: token });
    },

    /**
     * Credentials for host-side git on a GitHub repository (clone, fetch, push), or undefined for
     * any other repository. Only ever handed to git processes on the host.
     */
    async gitEnv(repoUrl: string): Promise<Record<string, string> | undefined> {
      const repo = parseRepoUrl(repoUrl, deps.gitUrl);
      if (!repo) return undefined;
      const id = await installationId(repo);
      const { token } = await tokens.get(`${id}:${repo.owner}/${repo.repo}`);
      return gitBasicAuthEnv(deps.gitUrl, 'x-access-token', token);
    },
  };
}

/** The installation covering a repository; undefined when GitHub says the App is not installed there (404). */
async function coveringInstallation(app: App, store: GitHubStore, repo: RepoRef): Promise<number | undefined> {
  const known = await store.installationFor(repo);
  if (known !== undefined) return known;
  try {
    const { data } = await app.octokit.request('GET /repos/{owner}/{repo}/installation', {
      owner: repo.owner,
      repo: repo.repo,
    });
    return data.id;
  } catch (error) {
    if ((error as { status?: unknown }).status === 404) return undefined;
    throw error;
  }
}

/**
 * The installation covering a repository, or an `unauthorized` error saying the App is not installed
 * there (GitHub's 404). Any other failure (a 5xx, a rate limit Octokit's retries outlasted) is not
 * taken for "not installed": it is thrown as it is.
 */
async function installationOf(app: App, store: GitHubStore, repo: RepoRef): Promise<number> {
  const id = await coveringInstallation(app, store, repo);
  if (id === undefined)
    throw new PatchbayError('unauthorized', `The GitHub App is not installed on ${repo.owner}/${repo.repo}`);
  return id;
}

/**
 * Installation tokens for host-side git, minted per repository (the cache key is
 * `<installation id>:<owner>/<repo>`) and cached until shortly before they expire.
 */
function gitTokenCache(app: App, readApp: AppReader) {
  return createExpiringTokenCache({
    async mint(key) {
      const [installationId, fullName] = splitKey(key);
      const repo = fullName.split('/')[1]!;
      const auth = (await app.octokit.auth({
        type: 'installation',
        installationId,
        repositoryNames: [repo],
        permissions: await gitPermissions(readApp),
        refresh: true,
      })) as { token: string; expiresAt: string };
      return { token: auth.token, expiresAt: new Date(auth.expiresAt) };
    },
  });
}

/**
 * What a git token asks for: contents, and workflows when the App has it (GitHub refuses a push
 * that touches .github/workflows/ without it; see explainPushRefusal).
 */
async function gitPermissions(readApp: AppReader): Promise<Record<string, 'write'>> {
  const granted = await readApp()
    .then((info) => info.permissions)
    .catch(() => ({}) as Record<string, string | undefined>);
  return { contents: 'write', ...(granted.workflows === 'write' && { workflows: 'write' }) };
}

type AppReader = ReturnType<typeof appReader>;

/** GET /app, asked once it answers (again after a failure): the bot's handle and what the App was granted. */
function appReader(app: App): (options?: { retries?: number }) => Promise<AppInfo> {
  let appInfo: Promise<AppInfo> | undefined;
  return (options = {}) => {
    appInfo ??= app.octokit
      .request('GET /app', { ...(options.retries !== undefined && { request: { retries: options.retries } }) })
      .then(({ data }) => {
        const slug = data?.slug;
        if (!slug)
          throw new PatchbayError(
            'config_invalid',
            'GET /app returned no slug: check GITHUB_APP_ID and the private key',
          );
        const identity = { slug, login: `${slug}[bot]`, mention: `@${slug}` };
        return { identity, permissions: (data.permissions ?? {}) as Record<string, string | undefined> };
      });
    appInfo.catch(() => (appInfo = undefined));
    return appInfo;
  };
}

/** Patchbay's Octokit for one GitHub: its URL, its log in pino, and how it waits out rate limits. */
function octokitClass(apiUrl: string, log: Logger) {
  return PatchbayOctokit.defaults({
    baseUrl: apiUrl,
    userAgent: 'patchbay',
    log: {
      debug: () => undefined,
      info: () => undefined,
      warn: (message: string) => log.warn({ github: true }, message),
      error: (message: string) => log.error({ github: true }, message),
    },
    throttle: {
      // GitHub: wait for the reset and retry a few times; back off on secondary limits.
      onRateLimit: (retryAfter: number, _options: unknown, _octokit: unknown, retryCount: number) => {
        log.warn({ retryAfter, retryCount }, 'GitHub rate limit hit');
        return retryCount < 2;
      },
      onSecondaryRateLimit: (retryAfter: number, _options: unknown, _octokit: unknown, retryCount: number) => {
        log.warn({ retryAfter, retryCount }, 'GitHub secondary rate limit hit');
        return retryCount < 1;
      },
    },
  });
}

function splitKey(key: string): [number, string] {
  const colon = key.indexOf(':');
  return [Number(key.slice(0, colon)), key.slice(colon + 1)];
}

/** GitHub downloads PKCS#1 keys; the JWT signer needs PKCS#8. Escaped newlines are accepted too. */
export function toPkcs8(pem: string): string {
  const text = pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem;
  try {
    return createPrivateKey(text).export({ type: 'pkcs8', format: 'pem' }).toString();
  } catch (error) {
    throw new PatchbayError('config_invalid', 'GITHUB_APP_PRIVATE_KEY is not a readable PEM private key', {
      cause: error,
    });
  }
}
