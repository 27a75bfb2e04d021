import type { ImageIntake } from '../../src/core/attachment.ts';
import { type LinearUploadDeps, linearUploadHosts } from './linear-uploads.ts';
import type { Logger } from 'pino';
import type { IntegrationContext, IntegrationModule } from '../integration-module.ts';
import type { LinearClient } from '@linear/sdk';
import { PatchbayError } from '../../src/core/errors.ts';
import { isTerminal } from '../../src/core/session-status.ts';
import { createLinearApi, linearClient, type LinearClientSource } from './linear-api.ts';
import { LinearApis } from './linear-apis.ts';
import type { LinearConfig } from './linear-env.ts';
import { createLinearReplier } from './linear-replier.ts';
import type { Sealer } from './linear-install.ts';
import { linearRoutes } from './linear-routes.ts';
import { createLinearStore, type LinearAgentSession, type LinearStore } from './linear-store.ts';
import type { RepoCatalog } from './linear-repo-choice.ts';
import { createLinearInterpreter } from './linear-interpreter.ts';
import { createLinearTokens, type LinearTokens, type RefreshFailure } from './linear-tokens.ts';
import { stableUuid } from './stable-uuid.ts';

/**
 * Linear as an integration of Patchbay, on Linear's Agent API: delegating an issue to the app or
 * mentioning it opens an agent session (AgentSessionEvent webhooks in), and the session's progress
 * goes back as agent activities and the session plan. Tokens: the workspace's from the OAuth install
 * when there is one (refreshed as they expire, see linear-tokens.ts), else LINEAR_ACCESS_TOKEN or
 * LINEAR_API_KEY.
 */
export function createLinearModule(input: {
  config: LinearConfig;
  context: IntegrationContext<'linear'>;
  repos: RepoCatalog;
  /** The secret box, for the OAuth install flow's signed state and stored tokens. */
  box?: Sealer;
}): IntegrationModule {
  const { config, context } = input;
  const log = context.log.child({ integration: 'linear' });
  const store = createLinearStore(context.db);
  const { fallback, fallbackApi } = fallbackAccess(config, log);
  const installUrl = `${context.publicUrl}/linear/oauth/start`;
  const tokens =
    config.oauth && input.box
      ? createLinearTokens({
          store,
          box: input.box,
          endpoint: {
            tokenUrl: config.oauth.tokenUrl,
            clientId: config.oauth.clientId,
            clientSecret: config.oauth.clientSecret,
          },
          log,
          onRefreshFailed: (failure) =>
            tellRefreshFailed({ failure, store, context, apiUrl: config.apiUrl, installUrl, log }),
        })
      : undefined;
  const apis = new LinearApis({ tokens, fallback: fallbackApi, apiUrl: config.apiUrl, installUrl, log });

  if (config.oauth && !input.box)
    throw new PatchbayError(
      'config_invalid',
      'The Linear install flow stores tokens encrypted: set PATCHBAY_SECRET_KEY (32+ random characters) to use LINEAR_CLIENT_ID',
    );
  return {
    name: 'linear',
    replier: createLinearReplier({ store, apis, context, log, keepAliveMs: config.keepAliveMs }),
    routes: linearRoutes({
      webhookSecret: config.webhookSecret,
      store,
      inbox: context.inbox,
      log,
      ...(config.oauth &&
        input.box && {
          oauth: { ...config.oauth, apiUrl: config.apiUrl, publicUrl: context.publicUrl, box: input.box },
        }),
      ...(config.allowedOrgs && { allowedOrgs: config.allowedOrgs }),
    }),
    interpreter: createLinearInterpreter({
      store,
      apis,
      context,
      repos: input.repos,
      teamRepos: config.teamRepos,
      ...(context.imageIntake && { uploads: uploadDeps(context.imageIntake, config.apiUrl, tokens, fallback) }),
      log,
    }),
    async start() {
      if (config.oauth && !config.allowedOrgs) {
        log.warn(
          `LINEAR_ALLOWED_ORGS is not set: any Linear workspace that installs the app through ${context.publicUrl}/linear/oauth/start runs sessions on this Patchbay's model budget; set it to the organization ids to serve`,
        );
      }
      log.info({ ...(config.allowedOrgs && { allowedOrgs: config.allowedOrgs }) }, 'Linear agent ready');
    },
  };
}

/**
 * What Patchbay uses in a workspace that did not install the app: LINEAR_ACCESS_TOKEN or
 * LINEAR_API_KEY, and the API over it (which cannot renew it); neither when none is set.
 */
function fallbackAccess(config: LinearConfig, log: Logger) {
  const fallback = config.accessToken
    ? { accessToken: config.accessToken }
    : config.apiKey
      ? { apiKey: config.apiKey }
      : undefined;
  const fallbackApi =
    fallback &&
    createLinearApi({
      client: unrenewable(
        linearClient(config.apiUrl, fallback),
        'accessToken' in fallback ? 'LINEAR_ACCESS_TOKEN' : 'LINEAR_API_KEY',
        log,
      ),
      log,
    });
  return { fallback, fallbackApi };
}

/** The workspace's agent sessions whose Patchbay session is still going (not completed, failed or cancelled). */
async function openAgentSessions(
  store: LinearStore,
  context: Pick<IntegrationContext, 'sessions'>,
  organizationId: string,
): Promise<LinearAgentSession[]> {
  const open: LinearAgentSession[] = [];
  for (const agentSession of await store.agentSessionsWithSessions(organizationId)) {
    const session = agentSession.sessionId ? await context.sessions.get(agentSession.sessionId) : undefined;
    if (session && !isTerminal(session.status)) open.push(agentSession);
  }
  return open;
}

/**
 * A workspace whose token Linear will not refresh any more: one line in the log saying what to do,
 * and the same in the thread of each of its sessions still going, as an error activity, while the
 * access token it has still works (it may have hours left; afterwards nothing reaches Linear).
 */
async function tellRefreshFailed(input: {
  failure: RefreshFailure;
  store: LinearStore;
  context: Pick<IntegrationContext, 'sessions'>;
  apiUrl: string;
  installUrl: string;
  log: Logger;
}): Promise<void> {
  const { failure, log } = input;
  const open = await openAgentSessions(input.store, input.context, failure.organizationId);
  log.error(
    { organizationId: failure.organizationId, reason: failure.reason, openSessions: open.length },
    `Linear will not refresh the access token of workspace ${failure.organizationId} (${failure.reason}): a workspace admin must install Patchbay again at ${input.installUrl}; until then Patchbay cannot answer there once the current token expires`,
  );
  const api = createLinearApi({
    client: linearClient(input.apiUrl, { accessToken: failure.accessToken }),
    log,
    attempts: 1,
  });
  const body = `Patchbay's access to this Linear workspace is ending: Linear would not renew its token (${failure.reason}). A workspace admin needs to install Patchbay again (${input.installUrl}); the work here carries on meanwhile, but its updates may stop reaching Linear.`;
  for (const session of open) {
    const id = stableUuid(`${session.agentSessionId}:token-refresh-failed:${failure.refreshCiphertext ?? 'none'}`);
    await api
      .postActivity(session.agentSessionId, { content: { type: 'error', body }, id })
      .catch((error: unknown) =>
        log.warn(
          { err: error, agentSessionId: session.agentSessionId },
          'could not tell a Linear session that the token cannot be refreshed',
        ),
      );
  }
}

/** A token from the environment: nothing to renew it with, so a refusal is said once, with what to do. */
function unrenewable(client: LinearClient, variable: string, log: Logger): LinearClientSource {
  let said = false;
  return {
    current: async () => client,
    async refused() {
      if (!said) {
        said = true;
        log.error(
          `Linear refused ${variable} (expired or revoked; Linear's OAuth access tokens last about a day): set a new one, or use the install flow (LINEAR_CLIENT_ID, LINEAR_CLIENT_SECRET), which renews its tokens`,
        );
      }
      return undefined;
    },
  };
}

/** Linear uploads are read with the workspace's installed token, else the configured token or API key. */
function uploadDeps(
  intake: ImageIntake,
  apiUrl: string,
  tokens: LinearTokens | undefined,
  fallback: { accessToken: string } | { apiKey: string } | undefined,
): LinearUploadDeps {
  return {
    intake,
    hosts: linearUploadHosts(apiUrl),
    async authorization(organizationId) {
      const installed = tokens && (await tokens.current(organizationId));
      if (installed) return `Bearer ${installed}`;
      if (!fallback) return undefined;
      return 'accessToken' in fallback ? `Bearer ${fallback.accessToken}` : fallback.apiKey;
    },
  };
}
