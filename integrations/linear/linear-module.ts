import type { IntegrationContext, IntegrationModule } from '../integration-module.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import { createLinearApi, linearClient, type LinearApi } from './linear-api.ts';
import type { LinearConfig } from './linear-env.ts';
import { createLinearIntegration } from './linear-integration.ts';
import { linearRoutes, type Sealer } from './linear-routes.ts';
import { createLinearStore } from './linear-store.ts';
import { createLinearSurface, type RepoSource } from './linear-surface.ts';

/** The secret box, for the OAuth install flow's signed state and stored tokens. */
export type SecretBox = Sealer & { open(sealed: string): string };

/**
 * Linear as a surface of Patchbay, on Linear's Agent API: delegating an issue to the app or
 * mentioning it opens an agent session (AgentSessionEvent webhooks in), and the session's progress
 * goes back as agent activities and the session plan. Tokens: the workspace's from the OAuth install
 * when there is one, else LINEAR_ACCESS_TOKEN or LINEAR_API_KEY.
 */
export function createLinearModule(input: { config: LinearConfig; context: IntegrationContext; repos: RepoSource; box?: SecretBox }): IntegrationModule {
  const { config, context } = input;
  const log = context.log.child({ integration: 'linear' });
  const store = createLinearStore(context.db);
  const apis = new Map<string, LinearApi>();
  const fallback = config.accessToken ? { accessToken: config.accessToken } : config.apiKey ? { apiKey: config.apiKey } : undefined;

  async function apiFor(organizationId: string): Promise<LinearApi> {
    const installed = input.box ? await store.installation(organizationId) : undefined;
    const token = installed && input.box ? { accessToken: input.box.open(installed.ciphertext) } : fallback;
    if (!token) throw new PatchbayError('unauthorized', `Patchbay is not installed in Linear workspace ${organizationId}: install it through ${context.publicUrl}/linear/oauth/start`);
    const cacheKey = 'accessToken' in token ? `t:${token.accessToken}` : `k:${token.apiKey}`;
    let api = apis.get(cacheKey);
    if (!api) {
      api = createLinearApi({ client: linearClient(config.apiUrl, token), log });
      apis.set(cacheKey, api);
    }
    return api;
  }

  if (config.oauth && !input.box) throw new PatchbayError('config_invalid', 'The Linear install flow stores tokens encrypted: set PATCHBAY_SECRET_KEY (32+ random characters) to use LINEAR_CLIENT_ID');
  return {
    name: 'linear',
    replier: createLinearIntegration({ store, api: apiFor, context, log }),
    routes: linearRoutes({
      webhookSecret: config.webhookSecret,
      store,
      inbox: context.inbox,
      log,
      ...(config.oauth && input.box && { oauth: { ...config.oauth, apiUrl: config.apiUrl, publicUrl: context.publicUrl, box: input.box } }),
    }),
    surface: createLinearSurface({ store, api: apiFor, context, repos: input.repos, teamRepos: config.teamRepos, log }),
    async start() {
      log.info('Linear agent ready');
    },
  };
}
