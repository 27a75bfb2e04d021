import { readFile } from 'node:fs/promises';
import type { IntegrationContext, IntegrationModule } from '../integration-module.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import type { IdentityProof } from '../../src/core/identity-proof.ts';
import { createGitHubClient } from './github-client.ts';
import type { GitHubConfig } from './github-env.ts';
import { createGitHubReplier } from './github-replier.ts';
import { createPublisher } from './github-publish.ts';
import { githubRoutes, oauthStartLink, PAGE_SIGN_IN_PATH } from './github-routes.ts';
import { createGitHubStore } from './github-store.ts';
import { createGitHubSurface } from './github-surface.ts';
import { createSecretBox } from './secret-box.ts';
import { classifyOutcome } from './classify-outcome.ts';
import { backfillOutcomes, recordOutcome } from './outcome-tracker.ts';

/**
 * GitHub as a surface of Patchbay: webhooks in (mentions, reviews, the trigger label,
 * installations), progress comments out, installation-token git credentials for the host, and
 * pull requests opened or updated after each run.
 */
export type GitHubModule = IntegrationModule & {
  /** A one-hour sign-in link bound to this person, when GitHub sign-in is configured. */
  signInLink?: (actor: { source: string; id: string }) => string;
  /** owner/name of every repository the App is installed on (candidates other surfaces offer). */
  installedRepos: () => Promise<string[]>;
};

/** `proofs`: the identity proofs other integrations offer (Sign in with Slack), asked before GitHub's sign-in. */
export async function createGitHubModule(
  config: GitHubConfig,
  context: IntegrationContext,
  proofs: readonly IdentityProof[] = [],
): Promise<GitHubModule> {
  const log = context.log.child({ integration: 'github' });
  let privateKey = config.privateKey;
  if (!privateKey && config.privateKeyPath) {
    privateKey = await readFile(config.privateKeyPath, 'utf8').catch((error: unknown) => {
      throw new PatchbayError('config_invalid', `GITHUB_APP_PRIVATE_KEY_PATH ${config.privateKeyPath} cannot be read`, {
        cause: error,
      });
    });
  }
  if (!privateKey)
    throw new PatchbayError('config_invalid', 'Set GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_PATH');
  const store = createGitHubStore(context.db);
  const client = createGitHubClient({
    appId: config.appId,
    privateKey,
    apiUrl: config.apiUrl,
    gitUrl: config.gitUrl,
    ...(config.oauth && { oauth: config.oauth }),
    store,
    log,
  });
  const box = config.secretKey ? createSecretBox(config.secretKey) : undefined;
  const surface = createGitHubSurface({
    client,
    store,
    context,
    gitUrl: config.gitUrl,
    triggerLabel: config.triggerLabel,
    log,
  });
  const publish = createPublisher({
    client,
    store,
    context,
    ...(box && { box }),
    gitUrl: config.gitUrl,
    draft: config.draft,
    log,
  });
  const stopping = new AbortController();
  const backfills = new Set<Promise<unknown>>();
  const signInLink =
    config.oauth && box
      ? (actor: { source: string; id: string }) => oauthStartLink(box, context.publicUrl, actor)
      : undefined;
  // The page's GitHub sign-in, when allowed people are named and the page has a token to guard it.
  const page =
    config.pageSignIn && context.pageSessions ? { ...config.pageSignIn, sessions: context.pageSessions } : undefined;
  if (config.pageSignIn && !context.pageSessions)
    log.warn(
      'WEB_SIGNIN_GITHUB_* is set but PATCHBAY_API_TOKEN is not: the page is open without sign-in, so GitHub sign-in to it is off',
    );
  return {
    ...(signInLink && { signInLink }),
    ...(page && config.oauth && box && { pageSignIn: { name: 'GitHub', url: PAGE_SIGN_IN_PATH } }),
    installedRepos: () => store.installedRepos(),
    name: 'github',
    replier: createGitHubReplier({ client, store, context, log }),
    routes: githubRoutes({
      webhookSecret: config.webhookSecret,
      store,
      inbox: context.inbox,
      client,
      ...(config.oauth &&
        box && {
          oauth: {
            clientId: config.oauth.clientId,
            box,
            gitUrl: config.gitUrl,
            publicUrl: context.publicUrl,
            proofs,
            ...(page && { page }),
          },
        }),
      log,
    }),
    async start() {
      // Fails start-up on a wrong App ID or key, with one clear line, instead of at the first webhook;
      // an unreachable GitHub is retried by the caller, without the client's own retries first.
      const bot = await client.identity({ retries: 0 }).catch((error: unknown) => {
        throw githubStartError(error, config.apiUrl);
      });
      log.info({ bot: bot.login }, 'GitHub App ready');
      // In the background: start-up does not wait for a read of every earlier pull request.
      backfills.add(
        backfillOutcomes({ client, ledger: context.outcomes, log, signal: stopping.signal })
          .then((done) => done.read > 0 && log.info(done, 'outcomes of earlier pull requests read from GitHub'))
          .catch((error: unknown) => log.warn({ err: error }, 'could not read the outcomes of earlier pull requests')),
      );
    },
    async stop() {
      stopping.abort();
      await Promise.allSettled([...backfills]);
      await surface.stop();
    },
    surface: {
      ...surface,
      // What a delivery says of the outcome of sessions' pull requests is recorded first; then the
      // delivery means what it always meant (a request, a lesson, a CI follow-up, or nothing).
      async interpret(delivery, signal) {
        const payload = parseJson(delivery.body);
        if (payload !== undefined)
          await recordOutcome(classifyOutcome(delivery.kind, payload, await client.identity()), context.outcomes, log);
        return surface.interpret(delivery, signal);
      },
    },
    publisher: { name: 'github', publish },
    gitCredentials: { name: 'github', gitEnv: (repo) => client.gitEnv(repo) },
  };
}

/**
 * Why GET /app failed at start: GitHub answered and refused the App (its id or key), or it could
 * not be reached or failed itself (Octokit reports a failed fetch as a 500; retryable).
 */
export function githubStartError(error: unknown, apiUrl: string): unknown {
  const status = (error as { status?: unknown }).status;
  if (error instanceof PatchbayError || typeof status !== 'number') return error;
  const message = (error as Error).message;
  if (status >= 500) {
    return new PatchbayError(
      'service_unavailable',
      `GitHub cannot be reached at ${apiUrl} (${message}): check this host's network and GITHUB_API_URL`,
      { cause: error, retryable: true },
    );
  }
  return new PatchbayError(
    'config_invalid',
    `GitHub refused the App (GET /app: ${status} ${message}): check GITHUB_APP_ID and the private key`,
    { cause: error },
  );
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
