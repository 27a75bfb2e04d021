import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import { createLinearApi, type LinearApi } from './linear-api.ts';
import { type LinearTokens, linearClientsFor } from './linear-tokens.ts';

type LinearApisDeps = {
  /** The installed workspaces' tokens (the OAuth install flow), when it is configured. */
  tokens: LinearTokens | undefined;
  /** The API of LINEAR_ACCESS_TOKEN or LINEAR_API_KEY, for workspaces without an install. */
  fallback: LinearApi | undefined;
  apiUrl: string;
  /** Where a workspace admin installs Patchbay (said when a workspace has no token). */
  installUrl: string;
  log: Logger;
};

/**
 * The Linear API to use for one workspace: the installed workspace's (its OAuth tokens, renewed as
 * they expire), else the one of LINEAR_ACCESS_TOKEN or LINEAR_API_KEY. One LinearApi is kept per
 * installed workspace, so its token renewals are shared by every call.
 */
export class LinearApis {
  readonly #deps: LinearApisDeps;
  readonly #installed = new Map<string, LinearApi>();

  constructor(deps: LinearApisDeps) {
    this.#deps = deps;
  }

  /** The API for this workspace; refused (unauthorized) when it is not installed and no token is configured. */
  async forOrganization(organizationId: string): Promise<LinearApi> {
    const { tokens, fallback, apiUrl, log } = this.#deps;
    if (tokens && (await tokens.installed(organizationId))) {
      let api = this.#installed.get(organizationId);
      if (!api) {
        api = createLinearApi({ client: linearClientsFor(tokens, organizationId, apiUrl), log });
        this.#installed.set(organizationId, api);
      }
      return api;
    }
    if (!fallback)
      throw new PatchbayError(
        'unauthorized',
        `Patchbay is not installed in Linear workspace ${organizationId}: install it through ${this.#deps.installUrl}`,
      );
    return fallback;
  }
}
